"""Workspace confinement of the fs tools: no path reaches outside the root, also under a race.

Contract FT3 (every path confined; ``..``, absolute and escaping symlinks refused with
``PATH_OUTSIDE_ROOT``; symlinks inside followed) and FT4 (a symlink swapped in between check and use
redirects nothing: checked host-side, with an outside file whose content and mtime must not change,
an outside FIFO whose writer wakes if anyone ever opens it, and outside names never listed).
Every test runs the real tools against a real temporary directory; FT1's older tools share the
same walk (``tests/tools/test_file_tools.py``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fs_helpers import code_of, runtime_for, text_of

from toolrt.tools import file_tools, fs_tools

SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture(name="layout")
def layout_fixture(tmp_path: Path) -> tuple[Path, Path]:
    """``tmp/ws`` (the workspace) beside ``tmp/outside`` (what must stay untouched)."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('inside')\n", encoding="utf-8")
    return workspace, outside


ESCAPES = [
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "src/../../ws/../outside/secret.txt",
    "link-out/secret.txt",
    "secret-link",
    "chain",
    "abs-link",
    "rel-dotdot-link",
]


def plant_escapes(workspace: Path, outside: Path) -> None:
    os.symlink(outside, workspace / "link-out")  # a directory symlink out
    os.symlink(outside / "secret.txt", workspace / "secret-link")  # a file symlink out
    os.symlink("secret-link", workspace / "chain")  # inside -> inside -> outside
    os.symlink(str(outside / "secret.txt"), workspace / "abs-link")
    os.symlink("src/../../outside/secret.txt", workspace / "rel-dotdot-link")


async def test_every_escape_is_refused_by_every_tool(layout: tuple[Path, Path]) -> None:
    """FT3: ``..``, absolute paths outside, symlinks out (direct, chained, absolute, via ``..``)."""
    workspace, outside = layout
    plant_escapes(workspace, outside)
    runtime = runtime_for(workspace)
    paths = [*ESCAPES, str(outside / "secret.txt"), "/etc/passwd"]
    for path in paths:
        calls = [
            ("read", {"path": path}),
            ("write", {"path": path, "content": "pwned"}),
            ("edit", {"path": path, "old_string": SECRET, "new_string": "pwned"}),
            ("grep", {"pattern": "SECRET", "path": path}),
            ("glob", {"pattern": "*", "path": path}),
        ]
        for name, args in calls:
            result = await runtime.call(name, args)
            assert result.is_error, (name, path)
            assert code_of(result) == "PATH_OUTSIDE_ROOT", (name, path, text_of(result))
            assert text_of(result).endswith("is outside the allowed directory"), (name, path)
            assert SECRET not in text_of(result)
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET + "\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_writes_cannot_create_directories_or_files_outside(layout: tuple[Path, Path]) -> None:
    """FT3: missing parents are created inside only; a parent symlinked out is refused before any mkdir."""
    workspace, outside = layout
    os.symlink(outside, workspace / "link-out")
    runtime = runtime_for(workspace)
    for path in ("link-out/new/dir/file.txt", "../outside/new.txt", "link-out/new.txt"):
        result = await runtime.call("write", {"path": path, "content": "x"})
        assert code_of(result) == "PATH_OUTSIDE_ROOT", path
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    created = await runtime.call("write", {"path": "a/b/c.txt", "content": "ok\n"})
    assert created.value["path"] == "a/b/c.txt"
    assert (workspace / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "ok\n"


async def test_symlinks_inside_the_root_are_followed_and_reported_canonically(
    layout: tuple[Path, Path],
) -> None:
    """FT3: a symlink that stays inside works (relative, absolute, via ``..``); results name the target."""
    workspace, _ = layout
    os.symlink("src/main.py", workspace / "rel")
    os.symlink(str(workspace / "src" / "main.py"), workspace / "abs")
    os.symlink("../src", workspace / "src" / "self-parent")  # src/self-parent -> src
    runtime = runtime_for(workspace)
    for path in ("rel", "abs", "src/self-parent/main.py", str(workspace / "rel"), "./src//main.py"):
        result = await runtime.call("read", {"path": path})
        assert not result.is_error, (path, text_of(result))
        assert result.value["path"] == "src/main.py"
        assert result.value["lines"] == [{"number": 1, "text": "print('inside')"}]
    written = await runtime.call("write", {"path": "rel", "content": "print('changed')\n"})
    assert written.value["path"] == "src/main.py" and written.value["operation"] == "update"
    assert os.path.islink(workspace / "rel")  # the link was written through, not replaced
    assert (workspace / "src" / "main.py").read_text(encoding="utf-8") == "print('changed')\n"


async def test_bad_paths_get_structured_errors(layout: tuple[Path, Path]) -> None:
    """A NUL in a path, a missing file, a directory, a FIFO (which must not hang the read)."""
    workspace, _ = layout
    os.mkfifo(workspace / "pipe")
    os.symlink("loop-b", workspace / "loop-a")
    os.symlink("loop-a", workspace / "loop-b")
    runtime = runtime_for(workspace)
    cases = {
        "src/\x00main.py": "INVALID_PATH",
        "loop-a": "INVALID_PATH",
        "missing.txt": "FILE_NOT_FOUND",
        "src/main.py/below": "NOT_A_DIRECTORY",
        "src": "IS_A_DIRECTORY",
        "pipe": "NOT_A_FILE",
    }
    for path, code in cases.items():
        result = await asyncio.wait_for(runtime.call("read", {"path": path}), 10)
        assert code_of(result) == code, (path, text_of(result))
    too_deep = await runtime.call("read", {"path": "../" * 10_000 + "x"})
    assert code_of(too_deep) == "PATH_OUTSIDE_ROOT" and len(text_of(too_deep)) < 300
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        fs_tools(workspace / "missing")


async def test_the_walks_never_list_or_search_what_a_symlink_points_at(layout: tuple[Path, Path]) -> None:
    """FT3: glob and grep do not follow symlinks (ripgrep and the Python scan alike)."""
    workspace, outside = layout
    plant_escapes(workspace, outside)
    os.symlink("src", workspace / "src-link")  # inside, but still not followed: no duplicates
    for use_ripgrep in (None, False):
        runtime = runtime_for(workspace, use_ripgrep=use_ripgrep)
        globbed = await runtime.call("glob", {"pattern": "**/*"})
        assert globbed.value["paths"] == ["src/main.py"]
        grepped = await runtime.call("grep", {"pattern": "SECRET|inside"})
        assert [entry["path"] for entry in grepped.value["files"]] == ["src/main.py"]
    listing = file_tools(workspace)[0].execute({"path": ".", "recursive": True}, None)
    assert {entry["path"] for entry in listing} == {"src", "src/main.py", "src-link"}


# --- races: a symlink swapped in between check and use ------------------------------------------------


class Flipper:
    """A thread that swaps ``target`` between a real entry and a symlink out, as fast as it can."""

    def __init__(self, target: Path, link_to: Path) -> None:
        self.target, self.link_to = target, link_to
        self.parked = target.with_name(target.name + ".parked")
        self.stop = threading.Event()
        self.flips = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                os.rename(self.target, self.parked)  # the real entry steps aside...
                os.symlink(self.link_to, self.target)  # ...a symlink out takes its place...
                os.unlink(self.target)
                os.rename(self.parked, self.target)  # ...and the real one comes back
                self.flips += 1
            except OSError:
                self.repair()

    def repair(self) -> None:
        """Put the real entry back after a swap collided with a tool's rename or mkdir."""
        try:
            if self.target.is_symlink():
                os.unlink(self.target)
            if self.parked.exists():
                if self.target.is_dir():
                    shutil.rmtree(self.target)
                elif self.target.exists():
                    os.unlink(self.target)
                os.rename(self.parked, self.target)
        except OSError:
            pass  # still colliding: the next round repairs

    def __enter__(self) -> Flipper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


class FifoSentinel:
    """An outside FIFO: its writer's ``open`` returns only when someone opens the FIFO to read."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.done = threading.Event()
        self.opened_early = False
        self.thread = threading.Thread(target=self.wait, daemon=True)
        self.thread.start()

    def wait(self) -> None:
        fd = os.open(self.path, os.O_WRONLY)  # blocks until a reader opens it
        self.opened_early = not self.done.is_set()
        os.close(fd)

    def release(self) -> bool:
        """Unblock the writer ourselves; ``True`` if a tool had opened the FIFO before."""
        if self.done.is_set():
            return self.opened_early
        self.done.set()
        reader = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self.thread.join(10)
        os.close(reader)
        return self.opened_early


@pytest.fixture(name="race")
def race_fixture(tmp_path: Path) -> Iterator[tuple[Path, Path, FifoSentinel]]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "d").mkdir(parents=True)
    outside.mkdir()
    for directory, text in ((workspace / "d", "inside\n"), (outside, SECRET + "\n")):
        (directory / "f.txt").write_text(text, encoding="utf-8")
        (directory / "g.txt").write_text(text, encoding="utf-8")
    (workspace / "d" / "p").write_text("inside\n", encoding="utf-8")
    sentinel = FifoSentinel(outside / "p")
    yield workspace, outside, sentinel
    sentinel.release()


def outside_state(outside: Path) -> dict[str, tuple[bytes, int]]:
    return {
        name: ((outside / name).read_bytes(), (outside / name).stat().st_mtime_ns)
        for name in sorted(os.listdir(outside))
        if name != "p"
    }


RACE_SECONDS = 1.5


async def test_reads_never_escape_while_a_directory_is_swapped_for_a_symlink(
    race: tuple[Path, Path, FifoSentinel],
) -> None:
    """FT4: ``d`` flips between a directory and a symlink to ``outside`` while reads, greps, globs run."""
    workspace, outside, sentinel = race
    runtime = runtime_for(workspace)
    python_runtime = runtime_for(workspace, use_ripgrep=False)
    seen: set[str] = set()
    with Flipper(workspace / "d", outside) as flipper:
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            for name, args in (
                ("read", {"path": "d/f.txt"}),
                ("read", {"path": "d/p"}),
                ("grep", {"pattern": "SECRET|inside"}),
                ("glob", {"pattern": "**/*"}),
            ):
                for target in (runtime, python_runtime):
                    result = await target.call(name, args)
                    text = text_of(result)
                    assert SECRET not in text, (name, text)
                    seen.add("ok" if not result.is_error else str(code_of(result)))
    assert flipper.flips > 20, flipper.flips  # the race really ran
    assert "ok" in seen
    assert not sentinel.release(), "a tool opened the FIFO outside the workspace"


async def test_writes_never_escape_while_a_directory_or_a_leaf_is_swapped(
    race: tuple[Path, Path, FifoSentinel],
) -> None:
    """FT4: ``d`` flips to a symlink out, and so does the leaf ``g.txt``; writes and edits keep going."""
    workspace, outside, sentinel = race
    before = outside_state(outside)
    runtime = runtime_for(workspace)
    (workspace / "g.txt").write_text("inside\n", encoding="utf-8")
    writes = 0
    with (
        Flipper(workspace / "d", outside) as flipper,
        Flipper(workspace / "g.txt", outside / "g.txt") as leaf,
    ):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            for name, args in (
                ("write", {"path": "d/f.txt", "content": "pwned\n"}),
                ("write", {"path": "g.txt", "content": "pwned\n"}),
                ("edit", {"path": "d/g.txt", "old_string": "\n", "new_string": "!\n", "replace_all": True}),
                ("write", {"path": "d/new/deeper.txt", "content": "pwned\n"}),
            ):
                result = await runtime.call(name, args)
                writes += not result.is_error
    assert flipper.flips > 20 and leaf.flips > 20, (flipper.flips, leaf.flips)
    assert writes > 0
    assert outside_state(outside) == before, "a write reached outside the workspace"
    assert not sentinel.release()
