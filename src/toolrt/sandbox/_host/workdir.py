"""A sandbox child's private work dir, after the child: removing whatever the program left in it."""

from __future__ import annotations

import asyncio
import contextlib
import os

__all__ = ["aremove_tree", "remove_tree"]


async def aremove_tree(path: str) -> None:
    """:func:`remove_tree` off the event loop, when the work dir is not simply empty (the common
    case, one ``rmdir`` on the loop)."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return
    except OSError:
        await asyncio.to_thread(remove_tree, path)


def remove_tree(root: str) -> None:
    """Delete a work dir whatever the program left in it, without recursion or long paths.

    ``shutil.rmtree`` recurses on Python 3.11, so a program leaving a 3000-level tree made the host
    raise ``RecursionError`` (found by the attack suite). This walks with one directory fd at a
    time (``openat``, never a path longer than one name), reopens directories the program locked
    (mode 000), and never raises: what cannot be removed is left, not fatal. The child is dead by
    the time this runs, so nothing changes under the walk.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(root, flags)
    except OSError:
        return
    names: list[str] = []  # the path from root to the current directory
    skipped: list[set[str]] = [set()]  # per level: subdirectories that could not be removed
    try:
        while True:
            descend = None
            try:
                entries = list(os.scandir(fd))
            except OSError:
                entries = []
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if not is_dir:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.name, dir_fd=fd)
                elif entry.name not in skipped[-1] and descend is None:
                    descend = entry.name
            if descend is not None:
                try:
                    os.chmod(descend, 0o700, dir_fd=fd)
                    child = os.open(descend, flags, dir_fd=fd)
                except OSError:
                    skipped[-1].add(descend)
                    continue
                os.close(fd)
                fd = child
                names.append(descend)
                skipped.append(set())
                continue
            if not names:
                break
            name = names.pop()
            skipped.pop()
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                skipped[-1].add(name)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)
