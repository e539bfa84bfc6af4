"""A workspace root every file tool is confined to, enforced with directory fds, not path strings.

Why fds: a string check (``resolve()`` then "is it under the root?") answers a question about the
file system at one instant, and the open that follows asks the kernel again, later. A model (or
anything else writing in the workspace, such as a ``bash`` job) can swap a directory for a symlink in
between, and the open follows it out. Here every path is walked one component at a time from an
fd of the root: each directory is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to the fd of
its parent (``openat``), ``..`` pops this walk's own stack instead of asking the kernel, and a
symlink is read (``readlinkat``) and its target walked the same way, so it may point anywhere
*inside* the root and nowhere else. The leaf is opened with ``O_NOFOLLOW`` from its parent's fd,
and writes go to a temporary file in that same directory fd and are renamed over the leaf with
``renameat`` (a rename replaces a symlink, it never follows one). Whatever is swapped in at any
moment, no byte is read from or written to outside the root.

One walk everywhere (rather than ``openat2(RESOLVE_BENEATH)`` where the kernel has it): the same
semantics on every kernel, absolute symlinks that point inside the root keep working, and the race
tests exercise the only code path there is.

What it does not cover: a directory the walk already holds that is *moved* out of the root while
the call runs (the fd follows the directory); hard links to outside files, which are the file
itself. Both need write access to the directory outside, which the workspace cannot grant.

>>> import tempfile
>>> root = tempfile.mkdtemp()
>>> workspace = Workspace(root)
>>> workspace.replace_file("notes/todo.txt", lambda before: b"milk\\n").path
'notes/todo.txt'
>>> with workspace.open_file("notes/../notes/todo.txt") as opened:
...     os.read(opened.fd, 100)
b'milk\\n'
>>> workspace.stat("../etc/passwd")
Traceback (most recent call last):
...
toolrt._errors.OutsideRootError: path '../etc/passwd' is outside the allowed directory
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from toolrt._errors import MAX_ECHO_CHARS, OutsideRootError, ToolrtError, clip_text

__all__ = [
    "FILE_NOT_FOUND",
    "FILE_TOO_LARGE",
    "INVALID_PATH",
    "IS_A_DIRECTORY",
    "NOT_A_DIRECTORY",
    "NOT_A_FILE",
    "Entry",
    "OpenedFile",
    "ReplacedFile",
    "Workspace",
    "shown",
]

FILE_NOT_FOUND = "FILE_NOT_FOUND"
NOT_A_DIRECTORY = "NOT_A_DIRECTORY"
IS_A_DIRECTORY = "IS_A_DIRECTORY"
NOT_A_FILE = "NOT_A_FILE"
INVALID_PATH = "INVALID_PATH"
FILE_TOO_LARGE = "FILE_TOO_LARGE"

_MAX_SYMLINKS = 40  # the kernel's own limit (MAXSYMLINKS)
_RETRIES = 8
"""How often an open that lost a race (the leaf became a symlink after it was checked) walks again."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = os.O_NOFOLLOW
# O_PATH (Linux) opens a directory for walking without read permission on it; elsewhere, O_RDONLY.
_WALK_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC
_LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO someone planted must not hang the call; it is refused after fstat.
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


def shown(path: str) -> str:
    """A path as a message quotes it: ``repr``, cut to a bounded length (a model may send anything)."""
    return clip_text(repr(path), MAX_ECHO_CHARS)


def _error(message: str, code: str) -> ToolrtError:
    return ToolrtError(message, code)


@dataclass(frozen=True)
class OpenedFile:
    """A regular file opened through the workspace: its fd (closed on exit), where it is, its stat."""

    fd: int
    path: str
    stat: os.stat_result


@dataclass(frozen=True)
class ReplacedFile:
    """What :meth:`Workspace.replace_file` did: the canonical path and the bytes before (``None``: new)."""

    path: str
    before: bytes | None
    after: bytes


@dataclass(frozen=True)
class Entry:
    """One entry met by :meth:`Workspace.walk`; ``dir_fd`` is valid only until the walk moves on."""

    path: str
    name: str
    kind: str  # "file", "dir", "symlink" or "other"
    dir_fd: int

    def open(self) -> OpenedFile | None:
        """Open this entry if it is (still) a regular file, through its directory's fd; else ``None``."""
        try:
            fd = os.open(self.name, _READ_FLAGS, dir_fd=self.dir_fd)
        except OSError:
            return None  # vanished, became a symlink, unreadable: the walk just skips it
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return None
        return OpenedFile(fd, self.path, info)


@dataclass
class _Location:
    """Where a path leads: an fd of the directory holding the leaf, and the leaf's name.

    ``name`` is ``None`` for the root itself. The leaf is not a symlink when the walk ended (a
    symlink leaf is followed), but it may have become one since: open it with ``O_NOFOLLOW``.
    """

    dir_fd: int
    parents: list[str]
    name: str | None

    @property
    def path(self) -> str:
        parts = [*self.parents, self.name] if self.name is not None else self.parents
        return "/".join(parts) or "."


class Workspace:
    """A directory that paths are confined to: ``..``, absolute paths and symlinks may not leave it.

    Paths are relative to the root; an absolute path is accepted when it names something under the
    root (as given, or with its symlinks resolved). The root itself is trusted: it is resolved once,
    here, and opened by that resolved path for every operation.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        given = os.path.abspath(os.fspath(root))
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace root {given!r} is not a directory")
        self._root = real
        self._aliases = tuple(dict.fromkeys((real, given)))

    @property
    def root(self) -> Path:
        """The resolved root directory."""
        return Path(self._root)

    # --- the walk -------------------------------------------------------------------------------

    def _parts(self, path: str, original: str) -> list[str]:
        if not isinstance(path, str):
            raise _error(f"a path must be a string, not {type(path).__name__}", INVALID_PATH)
        if "\x00" in path:
            raise _error(f"path {shown(original)} contains a NUL character", INVALID_PATH)
        if path.startswith("/"):
            for alias in self._aliases:
                if path == alias or path.startswith(alias.rstrip("/") + "/"):
                    return path[len(alias) :].split("/")
            raise OutsideRootError(original)
        return path.split("/")

    def _open_root(self, flags: int = _WALK_FLAGS) -> int:
        return os.open(self._root, flags)

    def _locate(self, path: str, *, create_dirs: bool = False) -> _Location:
        """Walk ``path`` from the root, one ``openat`` at a time; the caller closes ``dir_fd``."""
        pending = deque(self._parts(path, path))
        fds = [self._open_root()]
        names: list[str] = []
        links = 0
        try:
            while pending:
                part = pending.popleft()
                if part in ("", "."):
                    continue
                if part == "..":
                    if not names:
                        raise OutsideRootError(path)
                    os.close(fds.pop())
                    names.pop()
                    continue
                is_leaf = all(rest in ("", ".") for rest in pending)
                target = _readlink(part, fds[-1])
                if target is not None:
                    links += 1
                    if links > _MAX_SYMLINKS:
                        raise _error(f"path {shown(path)}: too many levels of symbolic links", INVALID_PATH)
                    if target.startswith("/"):
                        # An absolute target restarts the walk at the root (if it points under it).
                        while len(fds) > 1:
                            os.close(fds.pop())
                        names.clear()
                    pending.extendleft(reversed(self._parts(target, path)))
                    continue
                if is_leaf:
                    location = _Location(fds[-1], names, part)
                    fds.pop()
                    return location
                fds.append(self._open_directory(part, fds[-1], names, path, create_dirs=create_dirs))
                names.append(part)
            location = _Location(fds[-1], names, None)
            fds.pop()
            return location
        finally:
            for fd in fds:
                os.close(fd)

    def _open_directory(
        self, name: str, dir_fd: int, parents: list[str], path: str, *, create_dirs: bool
    ) -> int:
        for _ in range(_RETRIES):
            try:
                return os.open(name, _WALK_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create_dirs:
                    raise _error(f"path {shown(path)} does not exist", FILE_NOT_FOUND) from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=dir_fd)
            except OSError as error:
                if error.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                if _readlink(name, dir_fd) is not None:
                    # It became a symlink after it was checked: the caller's walk must follow it.
                    raise _Retry from None
                where = "/".join([*parents, name])
                raise _error(f"path {shown(path)}: {where!r} is not a directory", NOT_A_DIRECTORY) from None
        raise _error(f"path {shown(path)} keeps changing while it is opened", INVALID_PATH)

    def _located(self, path: str, *, create_dirs: bool = False) -> _Location:
        for _ in range(_RETRIES):
            try:
                return self._locate(path, create_dirs=create_dirs)
            except _Retry:
                continue
        raise _error(f"path {shown(path)} keeps changing while it is opened", INVALID_PATH)

    # --- operations -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def open_file(self, path: str) -> Iterator[OpenedFile]:
        """Open a regular file for reading; refuses directories, devices and FIFOs with a clear error."""
        fd = self._open_leaf(path, _READ_FLAGS)
        try:
            info = _regular_file_info(fd, path)
            yield OpenedFile(fd, self.canonical(path), info)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def open_directory(self, path: str) -> Iterator[tuple[int, str]]:
        """An fd of a directory (readable: ``os.scandir(fd)`` works) and its canonical path."""
        fd = self._open_leaf(path, _LIST_FLAGS, directory=True)
        try:
            yield fd, self.canonical(path)
        finally:
            os.close(fd)

    def stat(self, path: str) -> tuple[str, os.stat_result]:
        """The canonical path and the stat of what ``path`` leads to (symlinks inside followed)."""
        for _ in range(_RETRIES):
            location = self._located(path)
            try:
                if location.name is None:
                    return ".", os.fstat(location.dir_fd)
                info = os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    continue  # swapped in after the walk: walk again, it will be followed or refused
                return location.path, info
            except FileNotFoundError:
                raise _error(f"path {shown(path)} does not exist", FILE_NOT_FOUND) from None
            finally:
                os.close(location.dir_fd)
        raise _error(f"path {shown(path)} keeps changing while it is opened", INVALID_PATH)

    def canonical(self, path: str) -> str:
        """``path`` relative to the root, symlinks resolved (``"."`` for the root itself)."""
        location = self._located(path)
        os.close(location.dir_fd)
        return location.path

    def _open_leaf(self, path: str, flags: int, *, directory: bool = False) -> int:
        for _ in range(_RETRIES):
            location = self._located(path)
            try:
                if location.name is None:
                    return self._open_root(flags)
                return os.open(location.name, flags, dir_fd=location.dir_fd)
            except FileNotFoundError:
                raise _error(f"path {shown(path)} does not exist", FILE_NOT_FOUND) from None
            except OSError as error:
                if error.errno == errno.ENOTDIR and directory:
                    if _readlink(location.name or "", location.dir_fd) is None:
                        raise _error(f"path {shown(path)} is not a directory", NOT_A_DIRECTORY) from None
                elif error.errno != errno.ELOOP:
                    raise
                # ELOOP: the leaf became a symlink after the walk; walk again and follow or refuse it.
            finally:
                os.close(location.dir_fd)
        raise _error(f"path {shown(path)} keeps changing while it is opened", INVALID_PATH)

    def replace_file(
        self, path: str, change: Callable[[bytes | None], bytes], *, max_bytes: int = 16 << 20
    ) -> ReplacedFile:
        """Replace a file's bytes with ``change(before)`` (``before`` is ``None`` for a new file).

        Missing parent directories are created (inside the root). The new bytes go to a temporary
        file in the leaf's directory fd, are flushed to disk and renamed over the leaf, so a reader
        sees the old file or the new one, never half of it, and a symlink swapped in at the leaf is
        replaced rather than written through. The file keeps its permission bits.
        """
        location = self._located(path, create_dirs=True)
        try:
            if location.name is None:
                raise _error(f"path {shown(path)} is a directory, not a file", IS_A_DIRECTORY)
            before, mode = _read_existing(location, path, max_bytes)
            after = change(before)
            _write_atomically(location.dir_fd, location.name, after, mode)
            return ReplacedFile(location.path, before, after)
        finally:
            os.close(location.dir_fd)

    def walk(self, path: str = ".", *, recursive: bool = True, hidden: bool = False) -> Iterator[Entry]:
        """Every entry under a directory, depth first, each directory's entries sorted by name.

        Symlinks are reported (kind ``"symlink"``) but never descended into; hidden names (a leading
        ``.``) are skipped unless ``hidden``. Directories are opened through their parent's fd, so a
        directory swapped for a symlink mid-walk is not followed.
        """
        with self.open_directory(path) as (fd, base):
            yield from _walk_fd(fd, "" if base == "." else base + "/", recursive=recursive, hidden=hidden)


class _Retry(Exception):
    """Internal: the walk met a component that changed under it; start the walk again."""


def _readlink(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
            return None  # not a symlink, or not there (the open that follows says which)
        raise


def _regular_file_info(fd: int, path: str) -> os.stat_result:
    """``fstat`` of an opened leaf, refusing directories, devices and FIFOs with a clear error."""
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise _error(f"path {shown(path)} is a directory, not a file", IS_A_DIRECTORY)
    if not stat.S_ISREG(info.st_mode):
        raise _error(f"path {shown(path)} is not a regular file", NOT_A_FILE)
    return info


def _read_existing(location: _Location, path: str, max_bytes: int) -> tuple[bytes | None, int | None]:
    assert location.name is not None
    try:
        fd = os.open(location.name, _READ_FLAGS, dir_fd=location.dir_fd)
    except FileNotFoundError:
        return None, None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _error(f"path {shown(path)} changed while it was opened; try again", INVALID_PATH) from None
        if error.errno == errno.EISDIR:
            raise _error(f"path {shown(path)} is a directory, not a file", IS_A_DIRECTORY) from None
        raise
    try:
        info = _regular_file_info(fd, path)
        if info.st_size > max_bytes:
            limit = f"files over {max_bytes:,} bytes are not changed"
            raise _error(f"path {shown(path)} is {info.st_size:,} bytes; {limit}", FILE_TOO_LARGE)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if sum(map(len, chunks)) > max_bytes:
                raise _error(f"path {shown(path)} grew past {max_bytes:,} bytes while read", FILE_TOO_LARGE)
        return b"".join(chunks), stat.S_IMODE(info.st_mode)
    finally:
        os.close(fd)


def _write_atomically(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    temporary = f".{name[:200]}.{secrets.token_hex(6)}.toolrt-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    # A new file gets 0o666 minus the umask, as any editor would create it; an old one keeps its mode.
    fd = os.open(temporary, flags, 0o666 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk_fd(fd: int, prefix: str, *, recursive: bool, hidden: bool) -> Iterator[Entry]:
    with os.scandir(fd) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        if not hidden and entry.name.startswith("."):
            continue
        if not entry.name.isprintable() and not _is_utf8(entry.name):
            continue  # a name that is not UTF-8 has no JSON form (ripgrep's output skips it too)
        if entry.is_symlink():
            kind = "symlink"
        elif entry.is_dir(follow_symlinks=False):
            kind = "dir"
        elif entry.is_file(follow_symlinks=False):
            kind = "file"
        else:
            kind = "other"
        yield Entry(prefix + entry.name, entry.name, kind, fd)
        if kind == "dir" and recursive:
            try:
                child = os.open(entry.name, _LIST_FLAGS, dir_fd=fd)
            except OSError:
                continue  # gone, unreadable, or swapped for a symlink since the scan: not descended
            try:
                yield from _walk_fd(child, prefix + entry.name + "/", recursive=recursive, hidden=hidden)
            finally:
                os.close(child)
