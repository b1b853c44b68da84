"""Strict runs real bots in any language unchanged: what common runtimes need in the sandbox.

Each test starts a real runtime under a real strict sandbox (bubblewrap, the seccomp filter,
a uid of its own): first the runtimes' own start-up needs (/etc read by OpenSSL, the JVM,
alternatives, getpwuid), then real bots through `arena check-bot --sandbox strict`: a Java
bot launched from its source file with no flags and a static binary. A runtime that is not
installed is skipped, naming its Debian package (`make system-packages` installs them).
The starter kits (Python, pyzmq, Node.js, C, C++, Java) are checked in tests/test_new_bot.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from arena.launch import seccomp
from arena.launch.bubblewrap import BOT_ACCOUNT, Sandbox, UidClaim, check_strict_available
from arena.launch.process import ResourceLimits
from arena.starter import PLACEHOLDER
from tests.helpers import arena

KITS = Path(__file__).resolve().parents[2] / "arena" / "starter"


@pytest.fixture(scope="module", autouse=True)
def strict_available() -> None:
    check_strict_available()  # a clear error (and failure) when the host cannot sandbox


def need(program: str, package: str) -> str:
    path = shutil.which(program)
    if path is None:
        pytest.skip(f"{program} is not installed (Debian package {package}; make system-packages)")
    return path


@pytest.fixture
def uid() -> Iterator[int]:
    claim = UidClaim()
    yield claim.uid
    claim.release()


def in_sandbox(folder: Path, uid: int, argv: list[str], timeout: float = 120) -> CompletedProcess[str]:
    """Run ``argv`` in a strict sandbox (under the seccomp filter) in ``folder``, as ``uid``
    (no cgroup, and so, as for a bot in a memory cgroup, no address-space limit)."""
    folder.chmod(0o755)
    fd = seccomp.filter_fd()
    try:
        command = Sandbox(uid=uid).command(argv, folder=folder, seccomp_fd=fd)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
        return subprocess.run(command, pass_fds=(fd,), env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    finally:
        os.close(fd)


def test_etc_holds_what_runtimes_read_and_no_account_of_the_host(tmp_path: Path, uid: int) -> None:
    script = """
    echo LS: $(ls -A /etc)
    echo ME: $(id -un) $(id -gn)
    echo AWK: $(awk 'BEGIN { print 6 * 7 }')
    test -r /etc/ssl/openssl.cnf && echo OPENSSL-CNF
    test -r /etc/ssl/certs/ca-certificates.crt && echo CA-CERTS
    cat /etc/shadow && echo READ-SHADOW
    ls /etc/ssl/private && echo LISTED-PRIVATE
    echo PASSWD: $(cut -d: -f1,3 /etc/passwd)
    echo HOSTS: $(getent hosts localhost | head -1)
    """
    run = in_sandbox(tmp_path, uid, ["sh", "-c", script])
    out = run.stdout
    assert f"ME: {BOT_ACCOUNT} {BOT_ACCOUNT}" in out, out + run.stderr
    assert "AWK: 42" in out  # awk is reached through /etc/alternatives
    assert f"PASSWD: root:0 {BOT_ACCOUNT}:{uid} nobody:65534" in out
    assert "localhost" in out.split("HOSTS:")[1]
    listed = set(out.split("LS:")[1].splitlines()[0].split())
    assert {"ld.so.cache", "alternatives", "passwd", "group", "nsswitch.conf", "hosts"} <= listed, listed
    assert not listed & {"shadow", "gshadow", "sudoers", "ssh", "machine-id", "resolv.conf"}, listed
    if Path("/etc/ssl/openssl.cnf").exists():
        assert "OPENSSL-CNF" in out
    if Path("/etc/ssl/certs/ca-certificates.crt").exists():
        assert "CA-CERTS" in out
    assert "READ-SHADOW" not in out and "LISTED-PRIVATE" not in out


def test_python_ssl_loads_the_ca_certificates(tmp_path: Path, uid: int) -> None:
    import sys

    code = "import ssl; print('CAS', ssl.create_default_context().cert_store_stats()['x509_ca'])"
    run = in_sandbox(tmp_path, uid, [sys.executable, "-c", code])
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split("CAS")[1]) > 0


def test_node_starts_with_its_openssl_and_crypto(tmp_path: Path, uid: int) -> None:
    node = need("node", "nodejs")
    code = ("require('tls'); const c = require('crypto'); c.randomBytes(16); "
            "console.log('NODE', process.versions.openssl, c.createHash('sha256').update('x').digest('hex'))")
    run = in_sandbox(tmp_path, uid, [node, "-e", code])
    assert run.returncode == 0, f"exit code {run.returncode}: {run.stderr}"
    assert "NODE" in run.stdout and "2d711642b726b04401627ca9fbac32f5" in run.stdout, run.stdout


PROBE = """
public class Probe {
    public static void main(String[] args) throws Exception {
        new java.security.SecureRandom().nextInt();
        java.security.MessageDigest.getInstance("SHA-256");
        javax.net.ssl.SSLContext.getDefault();
        System.out.println("USER " + System.getProperty("user.name")
            + " HOME " + System.getProperty("user.home") + " TZ " + java.util.TimeZone.getDefault().getID()
            + " HEAP " + Runtime.getRuntime().maxMemory() / (1 << 20));
    }
}
"""


@pytest.mark.slow
def test_java_runtime_starts_with_its_configuration_and_a_named_user(tmp_path: Path, uid: int) -> None:
    java = need("java", "default-jre-headless")
    (tmp_path / "Probe.java").write_text(PROBE)
    (tmp_path / "Probe.java").chmod(0o644)
    run = in_sandbox(tmp_path, uid, [java, "Probe.java"], timeout=300)  # the source launcher: javac inside
    assert run.returncode == 0, f"exit code {run.returncode}: {run.stderr}"
    assert f"USER {BOT_ACCOUNT} HOME /tmp" in run.stdout, run.stdout


def kit_source(lang: str, name: str) -> str:
    """The kit's one program file (Java, JavaScript: a kit of one source)."""
    sources = [p for p in (KITS / lang).iterdir() if p.name != "bot.toml" and not p.name.startswith("_")]
    assert len(sources) == 1, sources
    return sources[0].read_text().replace(PLACEHOLDER, name)


@pytest.mark.slow
def test_java_bot_with_default_jvm_settings_passes_check_bot_strict(tmp_path: Path) -> None:
    need("java", "default-jre-headless")
    folder = tmp_path / "javaplain"
    folder.mkdir(mode=0o755)
    (folder / "Bot.java").write_text(kit_source("java", "javaplain"))
    # No JVM flags: the heap and thread pools as the JVM sizes them by itself. (Launching from
    # the source file, `java Bot.java`, also runs, but compiles at every start: check-bot
    # then reports a slow start, so the kit compiles once in its build.)
    compile_ = "java -m jdk.compiler/com.sun.tools.javac.Main -d . Bot.java"
    (folder / "bot.toml").write_text(f'name = "javaplain"\ncommand = "java -cp . Bot"\nprotocol = "stdio"\n'
                                     f'build = "{compile_}"\n')
    for path in folder.iterdir():
        path.chmod(0o644)
    run = arena("check-bot", str(folder), "--sandbox", "strict", "--games", "2", timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout


@pytest.mark.slow
def test_static_binary_passes_check_bot_strict(tmp_path: Path) -> None:
    cc = need("cc", "gcc")
    folder = tmp_path / "static"
    folder.mkdir(mode=0o755)
    sources = []
    for path in (KITS / "c").iterdir():  # the kit's program and its JSON parser
        if path.suffix in (".c", ".h"):
            (tmp_path / path.name).write_text(path.read_text().replace(PLACEHOLDER, "static"))
            sources += [str(tmp_path / path.name)] if path.suffix == ".c" else []
    build = subprocess.run([cc, "-static", "-O2", "-o", str(folder / "bot"), *sorted(sources)],
                           capture_output=True, text=True)
    if build.returncode != 0 and "cannot find -lc" in build.stderr:
        pytest.skip("no static C library (Debian package libc6-dev)")
    assert build.returncode == 0, build.stderr
    headers = subprocess.run(["readelf", "-l", str(folder / "bot")], capture_output=True, text=True).stdout
    assert "INTERP" not in headers  # no dynamic linker: a static binary as shipped
    (folder / "bot.toml").write_text('name = "static"\ncommand = "./bot"\nprotocol = "stdio"\n')
    (folder / "bot.toml").chmod(0o644)
    run = arena("check-bot", str(folder), "--sandbox", "strict", "--games", "2", timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout


WASM_PRELUDE = """
// WebAssembly, as a bot compiled from Rust or C with emscripten uses it: V8 reserves about
// 10 GiB of address space per memory, more than an address-space limit would allow.
const wasm = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 5, 3, 1, 0, 1]));
const instances = [0, 1, 2, 3].map(() => new WebAssembly.Instance(wasm));
console.error(`${instances.length} WebAssembly instances`);
"""


@pytest.mark.slow
def test_node_bot_using_webassembly_passes_check_bot_strict(tmp_path: Path) -> None:
    need("node", "nodejs")
    folder = tmp_path / "wasm"
    folder.mkdir(mode=0o755)
    source = kit_source("js", "wasm").replace('const NAME = "wasm";', 'const NAME = "wasm";\n' + WASM_PRELUDE)
    assert "WebAssembly.Instance" in source
    (folder / "bot.js").write_text(source)
    (folder / "bot.toml").write_text('name = "wasm"\ncommand = "node bot.js"\nprotocol = "stdio"\n')
    for path in folder.iterdir():
        path.chmod(0o644)
    run = arena("check-bot", str(folder), "--sandbox", "strict", "--games", "2", timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout


def test_address_space_is_limited_only_where_no_memory_cgroup_bounds_the_bot() -> None:
    limits = ResourceLimits()
    sandbox = Sandbox()
    assert sandbox.process_limits(limits, None) == limits  # no cgroup: the only memory bound
    cgroup = sandbox.make_cgroup()
    if cgroup is None or "memory" not in cgroup.folders:
        pytest.skip("no memory cgroup on this host")
    try:
        lifted = sandbox.process_limits(limits, cgroup)
    finally:
        cgroup.remove(timeout_s=0)
    assert lifted.address_space_bytes >= 1 << 48 and lifted.cpu_seconds == limits.cpu_seconds
