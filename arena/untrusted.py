"""Bot-controlled text, names and paths: one place that makes them safe to use.

Everything a bot author controls (the manifest's ``name``, the strings in its messages,
the files of its folder, the output of its build) is hostile until it has passed here:

- :func:`check_name` enforces the name rule of protocol/PROTOCOL.md at manifest load, so
  every name that reaches a path, a table, a terminal or a plot is plain ASCII;
- :func:`is_argument` tells whether a manifest's text can be a word of a command line or
  a path (no NUL), so a bad command is refused at manifest load, not at ``Popen``;
- :func:`valid_unicode` / :func:`clean_json_escapes` replace lone UTF-16 surrogates (valid
  JSON escapes, but not encodable as UTF-8) in text and in JSON text before it is parsed;
- :func:`for_terminal` shows control characters, escape sequences and bidi overrides as
  visible escapes before text is printed;
- :func:`csv_cell` escapes a CSV cell's control characters like :func:`for_terminal` and
  keeps a spreadsheet from reading it as a formula;
- :func:`inside` builds a path from a name and refuses one that leaves its folder;
- :func:`copy_folder` copies a bot folder without ever following a link, even one swapped
  in while it copies (submit's copy, strict's private build copy).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arena.errors import ArenaError, ConfigError

NAME_MAX = 64
NAME_RULE = ("1 to 64 characters: ASCII letters, digits, '-', '_' and '.', "
             "starting with a letter or a digit")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)

_SURROGATE = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


# ------------------------------------------------------------------ names
def is_valid_name(value: object) -> bool:
    """Whether ``value`` is a bot name by the rule (see :data:`NAME_RULE`)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: object, where: str, key: str = "name") -> str:
    """``value`` if it is a valid bot name; else ConfigError naming where, the key, the rule
    and the value (shown safely)."""
    if not is_valid_name(value):
        raise ConfigError(f"{where}: key '{key}': expected {NAME_RULE}, got {shown(value)}"
                          + name_suggestion(value))
    assert isinstance(value, str)
    return value


def name_suggestion(value: object) -> str:
    """For a name that breaks the rule: " (e.g. 'My-Bot')", the name with each run of other
    characters made a '-', when that is a valid name; else ""."""
    if not isinstance(value, str):
        return ""
    made = re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-._")[:NAME_MAX]
    return f" (e.g. {made!r})" if is_valid_name(made) and made != value else ""


# ------------------------------------------------------------------ command lines
ARGUMENT_RULE = "no NUL character (no command line or path can hold one)"


def is_argument(text: str) -> bool:
    """Whether ``text`` can be a word of a command line or a path (see :data:`ARGUMENT_RULE`):
    the kernel ends each at its first NUL, so ``Popen`` refuses such a word (ValueError), and
    a lone surrogate (which no TOML file yields) cannot be encoded at all."""
    return "\0" not in text and _SURROGATE.search(text) is None


# ------------------------------------------------------------------ free text
def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8.

    (JSON's ``"\\ud800"`` decodes to a lone surrogate; valid pairs are already joined.)
    """
    return _SURROGATE.sub(_REPLACEMENT, text)


# An escaped backslash (skipped whole, so that "\\\\ud800" is not read as an escape), a
# surrogate pair (kept), or a lone surrogate escape (replaced).
_SURROGATE_ESCAPE = re.compile(r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                               r"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})")
_MAY_ESCAPE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def clean_json_escapes(json_text: str) -> str:
    """JSON text with every lone UTF-16 surrogate escape (``"\\ud800"``: valid JSON, but no
    Unicode text: it could not be encoded again) replaced by ``\\ufffd``; pairs are kept.

    Done on the text, before it is parsed, with one regular expression: walking the parsed
    value in Python cost 480 to 640 ms per MiB of nested arrays, on the referee's CPU. Text
    decoded from UTF-8 holds no surrogate of its own, so escapes are all there is to fix."""
    if _MAY_ESCAPE_SURROGATE.search(json_text) is None:
        return json_text
    return _SURROGATE_ESCAPE.sub(lambda m: "\\ufffd" if m.group(1) else m.group(0), json_text)


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a note of how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


# ------------------------------------------------------------------ terminals
def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def for_terminal(text: object, *, newlines: bool = True) -> str:
    """``text`` safe to print: every character Python does not call printable is shown as
    ``\\xNN``/``\\uNNNN``: C0 and C1 controls (ESC starts every terminal escape sequence,
    CSI and OSC have C1 forms too), DEL, bidi overrides and other format characters, line
    separators, lone surrogates. With ``newlines`` (the default) line feeds and tabs are
    kept; without, they are escaped too, so the text stays on one line."""
    text = str(text)
    if text.isprintable():
        return text
    keep = "\n\t" if newlines else ""
    return "".join(ch if ch.isprintable() or ch in keep else _escaped(ch) for ch in text)


def shown(value: object, limit: int = 80) -> str:
    """A value quoted for an error message: ASCII only, control characters escaped, cut
    to about ``limit`` characters in the middle (the end of a path names what is wrong)."""
    text = ascii(value)
    if len(text) <= limit:
        return text
    head = max(1, (limit - 3) // 3)
    return text[:head] + "..." + text[head + 3 - limit:]


# ------------------------------------------------------------------ spreadsheets
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: Any) -> Any:
    """A CSV cell safe to open and to ``cat``: control characters, escape sequences and
    bidi overrides shown escaped as :func:`for_terminal` does (newlines and tabs kept; a
    NUL byte broke CSV tools), and no spreadsheet runs it as a formula: text beginning with
    ``=``, ``+``, ``-``, ``@``, a tab or a line break gets a leading ``'``. Numbers, and
    text that is just a number (``-3``, ``+1.5e3``), are left alone."""
    if not isinstance(value, str):
        return value
    value = for_terminal(value)
    if value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_frame(frame: Any) -> Any:
    """A copy of a pandas DataFrame with :func:`csv_cell` applied to every text cell and
    to the column headers (numeric, boolean and time columns are left as they are)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype.kind not in "biufcmM":
            out[column] = out[column].map(csv_cell)
    out.columns = [csv_cell(c) for c in out.columns]
    return out


# ------------------------------------------------------------------ paths
def inside(folder: Path | str, *parts: str) -> Path:
    """``folder/part/...``, refused (ConfigError) unless it stays inside ``folder``.

    Each part must be a plain file name: not empty, not ``.`` or ``..``, no ``/`` nor NUL.
    Symbolic links already on the way are followed when checking.
    """
    base = Path(folder)
    for part in parts:
        if (not part or part in (".", "..") or "/" in part or "\0" in part
                or os.sep in part):
            raise ConfigError(f"{base}: refusing the path {shown(part)} (it must be a plain name "
                              "inside that folder)")
    path = base.joinpath(*parts)
    real_base = os.path.realpath(base)
    real = os.path.realpath(path)
    if os.path.commonpath([real_base, real]) != real_base:
        raise ConfigError(f"{base}: refusing the path {shown(str(path))}: it leads outside that "
                          "folder")
    return path


def member_path(raw: str) -> str:
    """A path inside an uploaded archive, checked: relative, '/'-separated, no ``..``, no
    empty or ``.`` part but a trailing '/', no backslash, NUL, control character or lone
    surrogate, at most 255 bytes a part. Returns it normalised (no leading ``./``, no trailing
    '/'); raises ConfigError saying what is wrong with it."""
    if not isinstance(raw, str) or not raw:
        raise ConfigError("archive member with an empty name")
    what = f"archive member {shown(raw)}"
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise ConfigError(f"{what}: an absolute path; archives hold paths relative to the bot's folder")
    if "\\" in raw or "\0" in raw or any(ord(ch) < 32 or ord(ch) == 127 for ch in raw) \
            or _SURROGATE.search(raw):
        raise ConfigError(f"{what}: holds a backslash or a control character")
    parts = [part for part in raw.rstrip("/").split("/")]
    while parts and parts[0] == ".":
        parts = parts[1:]
    if not parts:
        return ""
    for part in parts:
        if part == "..":
            raise ConfigError(f"{what}: '..' leads outside the bot's folder")
        if part in ("", "."):
            raise ConfigError(f"{what}: an empty or '.' path part")
        if len(part.encode("utf-8", "replace")) > 255:
            raise ConfigError(f"{what}: a path part longer than 255 bytes")
    return "/".join(parts)


def file_name(text: str, *, limit: int = NAME_MAX, fallback: str = "bot") -> str:
    """``text`` made into one plain file name: ASCII letters, digits, ``-``, ``_`` and ``.``
    (anything else becomes ``_``), not starting with ``.``, at most ``limit`` characters."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", text, flags=re.ASCII)[:limit].lstrip(".")
    return name or fallback


def walk(folder: Path | str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(folder)`` (top down, links not followed, unreadable folders skipped) without
    recursion: Python 3.11's ``os.walk`` raises RecursionError in a tree about 1000 folders
    deep, which a bot folder or a build can hold."""
    stack = [os.fspath(folder)]
    while stack:
        root = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(root) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError:
            continue
        yield root, dirs, files
        stack.extend(os.path.join(root, name) for name in reversed(dirs))


def walk_at(folder: Path | str) -> Iterator[tuple[int, str, os.stat_result | None]]:
    """Everything under ``folder``, top down, as ``(dir_fd, name, lstat)``: ``name`` in the
    open folder ``dir_fd`` (act on it with ``dir_fd=``, never by path); then, once a
    folder's contents are done, ``(dir_fd, name, None)`` with ``dir_fd`` its parent (remove
    it there). A link is given, never followed; an entry gone meanwhile is skipped.

    No recursion and no path names: a build or a bot can leave a tree deeper than Python's
    recursion limit, than PATH_MAX, and than the descriptors we may open. One descriptor is
    held, whatever the depth: the walk climbs back through "..", checked to be the folder
    it came from (a folder moved meanwhile ends the walk with OSError). A folder's entries
    are given as they are read, and only its subfolders' names are kept: a build can make
    millions of names (hard links cost no inode). Changes the caller makes to the entry
    just given (chmod, unlink, rmdir) are expected."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(folder, flags)
    try:
        top = os.fstat(fd)
        # One level per open folder on the way down: its identity, its name, the subfolders left.
        levels: list[tuple[tuple[int, int], str, list[str]]] = [((top.st_dev, top.st_ino), "", [])]
        scan = True  # the folder at the top of levels is still to be read
        while True:
            _, _, pending = levels[-1]
            if scan:
                scan = False
                try:
                    entries = os.scandir(fd)
                except OSError:
                    entries = None
                if entries is not None:
                    with entries:
                        for entry in entries:
                            try:
                                info = entry.stat(follow_symlinks=False)
                            except OSError:
                                continue
                            yield fd, entry.name, info
                            if stat.S_ISDIR(info.st_mode):
                                pending.append(entry.name)
                continue
            if pending:
                name = pending.pop()
                try:
                    child = os.open(name, flags, dir_fd=fd)
                except OSError:
                    continue
                opened = os.fstat(child)  # a folder (O_DIRECTORY), never through a link
                os.close(fd)
                fd = child
                levels.append(((opened.st_dev, opened.st_ino), name, []))
                scan = True
                continue
            if len(levels) == 1:
                return
            _, name, _ = levels.pop()
            parent = os.open("..", flags, dir_fd=fd)
            reached = os.fstat(parent)
            os.close(fd)
            fd = parent
            if (reached.st_dev, reached.st_ino) != levels[-1][0]:
                raise OSError(errno.ESTALE, f"{name!r} was moved while its folder was walked")
            yield fd, name, None
    finally:
        os.close(fd)


def remove_tree(folder: Path | str) -> None:
    """``shutil.rmtree(folder, ignore_errors=True)`` that a bot's tree cannot break
    (:func:`walk_at`: Python 3.11's rmtree raised RecursionError about 1000 folders deep,
    which a bot's scratch folder can hold, and by path a tree deeper than PATH_MAX cannot
    be reached); a link, even one swapped in meanwhile, is removed, never followed. Folders
    we own but may not write (0555, as Go's module cache makes them) are opened up first.
    What cannot be removed is left."""
    try:
        for dir_fd, name, info in walk_at(folder):
            try:
                if info is None:
                    os.rmdir(name, dir_fd=dir_fd)
                elif not stat.S_ISDIR(info.st_mode):
                    os.unlink(name, dir_fd=dir_fd)
                elif info.st_mode & 0o700 != 0o700:  # a folder of ours we could not empty (Go's
                    os.chmod(name, stat.S_IMODE(info.st_mode) | 0o700, dir_fd=dir_fd)  # 0555 cache)
            except OSError:
                pass
    except OSError:
        pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def symlinks_in(folder: Path) -> list[Path]:
    """The symbolic links in ``folder`` (at any depth; links are not followed)."""
    found = []
    for root, dirs, files in walk(folder):
        for entry in dirs + files:
            path = Path(root) / entry
            if path.is_symlink():
                found.append(path)
    return sorted(found)


COPY_MAX_DEPTH = 256  # folder levels a copied bot folder may have
FOLDER_MAX_BYTES = 1 << 30  # the files of a bot folder, apparent sizes (a sparse file counts whole)
FOLDER_MAX_FILES = 100_000  # files, folders and links of a bot folder
"""What a bot folder may hold wherever the harness copies it: submit's copy, strict's
private build copy, a Dask bundle (a 12 KB folder holding a 3 GB sparse file was copied
as 3 GB of zeros)."""


def copy_folder(source: Path | str, target: Path | str, *, links_inside: bool, mode_mask: int = 0o777,
                max_bytes: int = FOLDER_MAX_BYTES, max_files: int = FOLDER_MAX_FILES) -> None:
    """Copy the bot folder ``source`` to the new folder ``target``, never through a link,
    even one swapped in while the copy runs: every folder and file is opened relative to
    its parent's descriptor with O_NOFOLLOW and judged by ``fstat`` of what was opened, not
    by its name (shutil.copytree lists a folder, then opens each subfolder by name: a
    subfolder swapped for a link meanwhile was followed, and a root-only folder copied).

    Symbolic links are copied as links when ``links_inside`` and they stay inside the folder
    (relative, not climbing out, and still inside once every link on their way is followed
    in the copy: ``s -> .`` and ``t -> s/..`` climb out together), refused otherwise;
    anything but folders, regular files and such links is refused. Modes are kept under
    ``mode_mask``. ``max_bytes`` and ``max_files`` bound what is copied, counted as it is
    copied. Raises ArenaError saying what was refused and where; ``target`` is left for the
    caller to remove."""
    source = Path(source)
    target = Path(target)
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    root_fd = os.open(source, flags_dir)
    copied = [0, 0]  # bytes, files
    links: list[tuple[str, str]] = []  # (relative path, target) of the links copied

    def refuse(relative: str, why: str) -> ArenaError:
        return ArenaError(f"bot folder {shown(str(source), 200)}: {shown(relative, 200)} {why}")

    def open_dir(parts: tuple[str, ...]) -> int:
        fd = os.dup(root_fd)
        for part in parts:
            try:
                child = os.open(part, flags_dir, dir_fd=fd)
            except OSError as exc:
                raise refuse("/".join(parts), f"is not a folder any more ({exc.strerror})") from None
            finally:
                os.close(fd)
            fd = child
        return fd

    def count(files: int, size: int, relative: str) -> None:
        copied[0] += size
        copied[1] += files
        if copied[1] > max_files:
            raise refuse(relative, f"brings the folder past its limit of {max_files:,} files and folders")
        if copied[0] > max_bytes:
            raise refuse(relative, f"brings the folder past its limit of {max_bytes >> 20:,} MiB "
                                   "(apparent sizes: a sparse file counts whole)")

    try:
        os.mkdir(target, 0o700)
        modes = [(target, stat.S_IMODE(os.fstat(root_fd).st_mode) & mode_mask)]  # set last: 0o500 folders
        pending: list[tuple[str, ...]] = [()]
        while pending:
            parts = pending.pop()
            if len(parts) > COPY_MAX_DEPTH:
                raise refuse("/".join(parts), f"is nested too deeply (more than {COPY_MAX_DEPTH} folders)")
            here = target.joinpath(*parts)
            fd = open_dir(parts)
            try:
                names = []
                with os.scandir(fd) as entries:
                    for entry in entries:  # counted as listed: a folder may hold millions
                        names.append(entry.name)
                        if copied[1] + len(names) > max_files:
                            raise refuse("/".join(parts) or ".", "brings the folder past its limit of "
                                                                  f"{max_files:,} files and folders")
                names.sort()
                for name in names:
                    relative = "/".join((*parts, name))
                    try:  # an entry gone or swapped since the listing is refused, not followed
                        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        count(1, 0, relative)
                        if stat.S_ISLNK(info.st_mode):
                            link = os.readlink(name, dir_fd=fd)
                            lands = os.path.normpath(os.path.join(*parts, link))
                            climbs = lands == ".." or lands.startswith("../")
                            if not links_inside:
                                raise refuse(relative, f"is a symbolic link (to {shown(link, 120)}): "
                                                       "copy the file in instead")
                            if os.path.isabs(link) or climbs:
                                raise ArenaError(f"bot folder {shown(str(source), 200)}: the symlink "
                                                 f"{shown(relative, 200)} points outside the folder "
                                                 f"({shown(link, 120)}); copy the file in instead")
                            os.symlink(link, here / name)
                            links.append((relative, link))
                        elif stat.S_ISDIR(info.st_mode):
                            os.mkdir(here / name, 0o700)
                            modes.append((here / name, stat.S_IMODE(info.st_mode) & mode_mask))
                            pending.append((*parts, name))
                        elif stat.S_ISREG(info.st_mode):
                            _copy_file(fd, name, here / name, mode_mask,
                                       lambda size, r=relative: count(0, size, r),
                                       lambda why, r=relative: refuse(r, why))
                        else:
                            kind = ("a named pipe" if stat.S_ISFIFO(info.st_mode) else "a socket"
                                    if stat.S_ISSOCK(info.st_mode) else "a device")
                            raise refuse(relative, f"is {kind}: a bot folder holds only folders and files")
                    except OSError as exc:
                        raise refuse(relative, f"cannot be copied ({exc.strerror})") from None
            finally:
                os.close(fd)
        # Judged in the copy, which only we can change: each link with every link on its way.
        top = os.path.realpath(target)
        for relative, link in links:
            lands = os.path.realpath(target / relative)
            if lands != top and not lands.startswith(top + os.sep):
                raise ArenaError(f"bot folder {shown(str(source), 200)}: the symlink {shown(relative, 200)} "
                                 f"({shown(link, 120)}) leads outside the folder through another link; "
                                 "copy the file in instead")
        for folder, mode in reversed(modes):
            os.chmod(folder, mode)
    finally:
        os.close(root_fd)


def _copy_file(dir_fd: int, name: str, target: Path, mode_mask: int, count: Any, refuse: Any) -> None:
    """One regular file, opened without following a link and without blocking (a FIFO
    swapped in is refused, not waited on)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise refuse("is not a regular file any more")
        counted = info.st_size  # counted before a byte is copied (a sparse file of 3 GB ...)
        count(counted)
        read = 0
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            while chunk := os.read(fd, 1 << 20):
                read += len(chunk)
                if read > counted:  # ... and a file growing while it is copied
                    count(read - counted)
                    counted = read
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        finally:
            os.close(out)
        os.chmod(target, stat.S_IMODE(info.st_mode) & mode_mask)
    finally:
        os.close(fd)


__all__ = ["ARGUMENT_RULE", "COPY_MAX_DEPTH", "FOLDER_MAX_BYTES", "FOLDER_MAX_FILES", "NAME_MAX",
           "NAME_RULE", "cap", "check_name", "clean_json_escapes", "copy_folder", "csv_cell", "csv_frame",
           "file_name", "for_terminal", "inside", "is_argument", "is_valid_name", "member_path",
           "name_suggestion", "remove_tree", "shown", "symlinks_in", "valid_unicode", "walk", "walk_at"]
