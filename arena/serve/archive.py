"""Unpacking an uploaded bot archive (.tar.gz or .zip) by the project's untrusted-path rules.

An upload is a stranger's file. Nothing in it is extracted by the archive libraries
themselves: each member is checked here (its path by :func:`arena.untrusted.member_path`,
its kind, its size) and written by us into a fresh folder, with every limit counted as we
go, so an archive that breaks one is refused before it has cost more than the limit:

- the archive itself: at most ``max_bytes`` (the server refuses more with 413 before
  this module sees it);
- members: at most ``max_files`` entries, ``max_depth`` folder levels, ``max_unpacked``
  bytes in all, and an unpacked size at most ``max_ratio`` times the archive's;
- only regular files and folders: links (symbolic or hard), devices, FIFOs are refused;
- no absolute path, no ``..``, no name that is not valid text.

The result is a folder and its *content address*: the SHA-256 of every file's path,
executable bit and content, in path order, so the same bot uploaded twice (in either
format, in any member order) has the same address.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from arena.errors import ArenaError
from arena.untrusted import member_path, remove_tree, shown

ARCHIVE_MAX_BYTES = 20 * 1024 * 1024
UNPACKED_MAX_BYTES = 200 * 1024 * 1024
ARCHIVE_MAX_FILES = 10_000
ARCHIVE_MAX_DEPTH = 32
ARCHIVE_MAX_RATIO = 200  # unpacked bytes per archive byte (a zip bomb reaches 1000s)
MEMBER_PATH_MAX_BYTES = 1024  # a member's whole path (each part: 255), well within PATH_MAX once unpacked
TAR_HEADER_MAX_BYTES = 64 * 1024  # a pax or GNU long-name header (tarfile reads one whole into memory)
_CHUNK = 1 << 16


class ArchiveError(ArenaError):
    """The upload is refused; the message says what was wrong and where (one line)."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int = ARCHIVE_MAX_BYTES
    max_unpacked: int = UNPACKED_MAX_BYTES
    max_files: int = ARCHIVE_MAX_FILES
    max_depth: int = ARCHIVE_MAX_DEPTH
    max_ratio: int = ARCHIVE_MAX_RATIO


@dataclass(frozen=True)
class Unpacked:
    folder: Path
    digest: str  # the content address (hex SHA-256)
    files: int
    bytes: int


def unpack(data: bytes, target: Path, limits: Limits = Limits()) -> Unpacked:
    """Unpack the archive ``data`` into the new folder ``target`` (which must not exist).
    Raises ArchiveError (and leaves no ``target``) when the archive breaks a rule. A single
    top-level folder holding everything (``tar czf bot.tgz mybot/``) is unwrapped."""
    if len(data) > limits.max_bytes:
        raise ArchiveError(f"the archive is {len(data)} bytes, over the limit of {limits.max_bytes}")
    budget = min(limits.max_unpacked, max(len(data), 1) * limits.max_ratio)
    target.mkdir(mode=0o755)
    try:
        entries = _entries(data, limits)
        prefix = _common_folder([name for name, _, _ in entries])
        total = 0
        files = 0
        hashes: list[tuple[str, bool, str]] = []
        for name, kind, opener in entries:
            if prefix:
                name = name[len(prefix) + 1 :]
                if not name:
                    continue
            path = target.joinpath(*name.split("/"))
            if kind == "dir":
                try:
                    path.mkdir(parents=True, exist_ok=True)
                except OSError:
                    raise ArchiveError(
                        f"archive member {shown(name)}: a file of that name is in the archive too"
                    ) from None
                continue
            assert opener is not None
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                raise ArchiveError(
                    f"archive member {shown(name)}: a file stands where its folder should be"
                ) from None
            if os.path.lexists(path):
                raise ArchiveError(f"archive member {shown(name)} appears twice")
            digest = hashlib.sha256()
            executable = opener.executable
            with opener.open() as source, open(path, "xb") as out:
                while chunk := _read(source, name):
                    total += len(chunk)
                    if total > budget:
                        why = (
                            f"over {limits.max_unpacked} bytes"
                            if budget == limits.max_unpacked
                            else f"over {limits.max_ratio} times the archive's size (a compression bomb?)"
                        )
                        raise ArchiveError(f"the archive unpacks to {why}, at member {shown(name)}")
                    digest.update(chunk)
                    out.write(chunk)
            os.chmod(path, 0o755 if executable else 0o644)
            files += 1
            hashes.append((name, executable, digest.hexdigest()))
        if not files:
            raise ArchiveError("the archive holds no file")
        address = hashlib.sha256()
        for name, executable, digest_hex in sorted(hashes):
            address.update(f"{name}\0{int(executable)}\0{digest_hex}\n".encode())
        return Unpacked(target, address.hexdigest(), files, total)
    except BaseException:
        remove_tree(target)
        raise


def _read(source: IO[bytes], name: str) -> bytes:
    try:
        return source.read(_CHUNK)
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError) as exc:  # a bad CRC, damaged data
        raise ArchiveError(f"archive member {shown(name)} is damaged: {shown(str(exc), 200)}") from None


class _TarHeader(tarfile.TarInfo):
    """tarfile reads a pax or GNU long-name header whole into memory (a 100 kB .tar.gz holding
    a 100 MB name cost a minute and ~700 MB): one larger than any path we take is refused first."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        extended = (
            tarfile.GNUTYPE_LONGNAME,
            tarfile.GNUTYPE_LONGLINK,
            tarfile.XHDTYPE,
            tarfile.XGLTYPE,
            tarfile.SOLARIS_XHDTYPE,
        )
        if self.type in extended and self.size > TAR_HEADER_MAX_BYTES:
            raise ArchiveError(
                f"the archive has an extended header of {self.size} bytes (at most {TAR_HEADER_MAX_BYTES})"
            )
        return super()._proc_member(tarfile_)  # type: ignore[misc, no-any-return]


class _Capped:
    """The decompressed .tar stream, refused once it would pass ``cap`` bytes: reading the
    archive's headers skips over members' data, which costs decompressing it too (a member of
    a few GB of zeros, then one refused by name, cost seconds a GB before any limit counted)."""

    def __init__(self, raw: gzip.GzipFile, cap: int) -> None:
        self.raw = raw
        self.cap = cap

    def _over(self) -> ArchiveError:
        return ArchiveError(f"the archive unpacks to over {self.cap} bytes (a compression bomb?)")

    def read(self, size: int = -1) -> bytes:
        room = self.cap + 1 - self.raw.tell()
        data = self.raw.read(room if size is None or size < 0 or size > room else size)
        if self.raw.tell() > self.cap:
            raise self._over()
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self.raw.tell() + offset if whence == 1 else None
        if target is not None and target > self.cap:
            raise self._over()
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()


@dataclass
class _Opener:
    open: Callable[[], IO[bytes]]
    executable: bool


def _entries(data: bytes, limits: Limits) -> list[tuple[str, str, _Opener | None]]:
    """The archive's members as (checked path, 'file' or 'dir', opener), in archive order."""
    if data[:2] == b"\x1f\x8b":
        budget = min(limits.max_unpacked, max(len(data), 1) * limits.max_ratio)
        headers = (limits.max_files + 16) * 2048  # each member's header and padding
        stream = _Capped(gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb"), budget + headers)
        return _tar_entries(stream, limits)
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return _zip_entries(data, limits)
    raise ArchiveError("the upload is neither a .tar.gz nor a .zip archive (by its first bytes)")


def _count(seen: int, limits: Limits) -> None:
    if seen > limits.max_files:
        raise ArchiveError(f"the archive holds more than {limits.max_files} entries")


def _checked(raw: str, limits: Limits) -> str:
    try:
        name = member_path(raw)
    except ArenaError as exc:
        raise ArchiveError(str(exc)) from None
    if len(name.encode("utf-8", "replace")) > MEMBER_PATH_MAX_BYTES:
        raise ArchiveError(f"archive member {shown(name)}: a path longer than {MEMBER_PATH_MAX_BYTES} bytes")
    if name.count("/") + 1 > limits.max_depth:
        raise ArchiveError(f"archive member {shown(name)} is nested more than {limits.max_depth} levels deep")
    return name


def _tar_entries(stream: _Capped, limits: Limits) -> list[tuple[str, str, _Opener | None]]:
    out: list[tuple[str, str, _Opener | None]] = []
    try:
        archive = tarfile.open(fileobj=stream, mode="r:", tarinfo=_TarHeader)  # type: ignore[call-overload]
        seen = 0
        while (member := archive.next()) is not None:  # one at a time: a million headers stop at the limit
            seen += 1
            _count(seen, limits)
            name = _checked(member.name, limits)
            if member.isdir():
                if name:
                    out.append((name, "dir", None))
            elif member.isreg():

                def opener(member: tarfile.TarInfo = member) -> IO[bytes]:
                    handle = archive.extractfile(member)
                    assert handle is not None
                    return handle

                out.append((name, "file", _Opener(opener, bool(member.mode & 0o111))))
            else:
                kind = (
                    "a symbolic link"
                    if member.issym()
                    else "a hard link"
                    if member.islnk()
                    else "a FIFO"
                    if member.isfifo()
                    else "a device node"
                    if member.isdev()
                    else "a special file"
                )
                raise ArchiveError(
                    f"archive member {shown(name)} is {kind}: only files and folders are taken"
                )
    except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error) as exc:
        raise ArchiveError(f"the .tar.gz archive is damaged: {shown(str(exc), 200)}") from None
    return out


def _zip_entries(data: bytes, limits: Limits) -> list[tuple[str, str, _Opener | None]]:
    out: list[tuple[str, str, _Opener | None]] = []
    # The entry count of the end record, before zipfile parses the whole central directory
    # (220,000 entries cost it 5.7 s and 126 MB before the count was looked at).
    try:
        end = zipfile._EndRecData(io.BytesIO(data))  # type: ignore[attr-defined]
        if end:
            _count(int(end[zipfile._ECD_ENTRIES_TOTAL]), limits)  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError, ValueError, OSError):
        pass  # the count below still holds
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ArchiveError(f"the .zip archive is damaged: {shown(str(exc), 200)}") from None
    _count(len(infos), limits)
    for info in infos:
        name = _checked(info.filename, limits)
        mode = info.external_attr >> 16
        if info.is_dir():
            if name:
                out.append((name, "dir", None))
            continue
        if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits: a plain file (zip's default)
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "a special file"
            raise ArchiveError(f"archive member {shown(name)} is {kind}: only files and folders are taken")

        def opener(info: zipfile.ZipInfo = info) -> IO[bytes]:
            try:
                return archive.open(info)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
                raise ArchiveError(f"archive member {shown(info.filename)}: {shown(str(exc), 200)}") from None

        out.append((name, "file", _Opener(opener, bool(mode & 0o111))))
    return out


def _common_folder(names: list[str]) -> str:
    """The one top-level folder every member is inside, or '' (then nothing is unwrapped)."""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) != 1:
        return ""
    top = tops.pop()
    return (
        top
        if all(name == top or name.startswith(top + "/") for name in names)
        and any(name.startswith(top + "/") for name in names)
        else ""
    )


def pack(folder: Path) -> bytes:
    """``folder`` as a .tar.gz (what ``arena upload`` sends): its files and folders, relative
    to it, never following a link (a link is refused: the server would refuse it too)."""
    buffer = io.BytesIO()
    root = Path(folder)
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for current, dirs, files in os.walk(root, followlinks=False):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = Path(current) / name
                relative = path.relative_to(root).as_posix()
                if relative.split("/", 1)[0] in (".git", "__pycache__") or "/__pycache__" in relative:
                    continue
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    raise ArchiveError(
                        f"{shown(str(path))} is a symbolic link: the server takes plain files "
                        "only (copy what it points to into the folder)"
                    )
                if stat.S_ISDIR(info.st_mode):
                    archive.add(path, arcname=relative, recursive=False)
                elif stat.S_ISREG(info.st_mode):
                    archive.add(path, arcname=relative, recursive=False)
    return buffer.getvalue()


__all__ = ["ARCHIVE_MAX_BYTES", "ArchiveError", "Limits", "Unpacked", "pack", "unpack"]
