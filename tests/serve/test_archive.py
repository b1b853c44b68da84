"""Uploaded archives: unpacked member by member by our rules, or refused with why."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from arena.serve.archive import ArchiveError, Limits, pack, unpack


def tar_gz(members: list[tuple[str, bytes | None, dict]]) -> bytes:
    """A .tar.gz of (name, data or None for a folder, TarInfo attributes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data, attrs in members:
            info = tarfile.TarInfo(name)
            for key, value in attrs.items():
                setattr(info, key, value)
            if data is None and "type" not in attrs:
                info.type = tarfile.DIRTYPE
            info.size = len(data) if data is not None else 0
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def zip_bytes(members: list[tuple[str, bytes]], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


BOT = [
    ("bot.toml", b'name = "b"\ncommand = ["python3", "bot.py"]\nprotocol = "stdio"\n', {}),
    ("bot.py", b"print('hi')\n", {"mode": 0o755}),
]


def test_a_tar_gz_unpacks_with_modes_and_the_same_address_as_the_zip(tmp_path: Path) -> None:
    from_tar = unpack(tar_gz(BOT), tmp_path / "t")
    assert (tmp_path / "t" / "bot.py").read_bytes() == b"print('hi')\n"
    assert os.stat(tmp_path / "t" / "bot.py").st_mode & 0o111
    assert not os.stat(tmp_path / "t" / "bot.toml").st_mode & 0o111
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, attrs in reversed(BOT):  # another order: the same content
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | attrs.get("mode", 0o644)) << 16
            archive.writestr(info, data)
    from_zip = unpack(buffer.getvalue(), tmp_path / "z")
    assert from_tar.digest == from_zip.digest and from_tar.files == 2


def test_one_top_level_folder_is_unwrapped(tmp_path: Path) -> None:
    unpack(tar_gz([("mybot", None, {})] + [(f"mybot/{n}", d, a) for n, d, a in BOT]), tmp_path / "t")
    assert sorted(os.listdir(tmp_path / "t")) == ["bot.py", "bot.toml"]


@pytest.mark.parametrize(
    ("members", "words"),
    [
        ([("../evil", b"x", {})], "'..' leads outside"),
        ([("a/../../evil", b"x", {})], "'..' leads outside"),
        ([("/etc/evil", b"x", {})], "absolute path"),
        ([("link", None, {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"})], "symbolic link"),
        ([("f", b"x", {}), ("hard", None, {"type": tarfile.LNKTYPE, "linkname": "f"})], "hard link"),
        ([("dev", None, {"type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3})], "device node"),
        ([("fifo", None, {"type": tarfile.FIFOTYPE})], "FIFO"),
        ([("a\x01b", b"x", {})], "control character"),
        ([("f", b"x", {}), ("f", b"y", {})], "appears twice"),
    ],
)
def test_unsafe_members_are_refused_and_nothing_is_left(tmp_path: Path, members: list, words: str) -> None:
    with pytest.raises(ArchiveError, match=words):
        unpack(tar_gz(members), tmp_path / "t")
    assert not (tmp_path / "t").exists()
    assert not (tmp_path / "evil").exists()


def test_a_compression_bomb_stops_at_the_ratio(tmp_path: Path) -> None:
    bomb = zip_bytes([("big", b"\0" * (50 << 20))])
    assert len(bomb) < 100_000
    with pytest.raises(ArchiveError, match="times the archive's size"):
        unpack(bomb, tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_limits_on_count_depth_and_size(tmp_path: Path) -> None:
    many = tar_gz([(f"f{i}", b"x", {}) for i in range(30)])
    with pytest.raises(ArchiveError, match="more than 20 entries"):
        unpack(many, tmp_path / "a", Limits(max_files=20))
    deep = tar_gz([("/".join(["d"] * 40) + "/f", b"x", {})])
    with pytest.raises(ArchiveError, match="nested more than 32"):
        unpack(deep, tmp_path / "b")
    with pytest.raises(ArchiveError, match="over the limit of 10"):
        unpack(many, tmp_path / "c", Limits(max_bytes=10))


def test_not_an_archive_and_damaged_ones_get_one_line(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="neither a .tar.gz nor a .zip"):
        unpack(b"hello", tmp_path / "a")
    with pytest.raises(ArchiveError, match="damaged"):
        unpack(gzip.compress(b"not a tar at all" * 100), tmp_path / "b")
    with pytest.raises(ArchiveError, match="holds no file"):
        unpack(tar_gz([("empty", None, {})]), tmp_path / "c")


def test_pack_refuses_links_and_round_trips(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    for name, data, _ in BOT:
        (folder / name).write_bytes(data)
    (folder / "sub").mkdir()
    (folder / "sub" / "x.txt").write_text("x")
    unpacked = unpack(pack(folder), tmp_path / "out")
    assert unpacked.files == 3 and (tmp_path / "out" / "sub" / "x.txt").read_text() == "x"
    (folder / "link").symlink_to("/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        pack(folder)


def test_a_zip_over_the_entry_count_is_refused_before_its_directory_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team: 220,000 directory entries cost 5.7 s and 126 MB before the count was checked:
    the end record's count now refuses it before zipfile parses the directory at all."""
    members = [(f"d{i}/", b"") for i in range(10_001)]
    data = zip_bytes(members, compression=zipfile.ZIP_STORED)

    def parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the whole central directory was parsed")

    monkeypatch.setattr(zipfile.ZipFile, "__init__", parsed)
    with pytest.raises(ArchiveError, match="more than 10000 entries"):
        unpack(data, tmp_path / "z")
