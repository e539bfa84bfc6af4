"""The child modules' precompiled code: built once by the host into a table file, read by every
child before it loads anything, used only when the bytecode magic matches, unreadable to the program.

Host-side tests build real tables; child-side tests call the child's own reader and loader
(``bootstrap._precompiled``, ``bootstrap._load_by_path``) in-process; the end-to-end tests boot real
confined children under every backend this machine has and ask them what they loaded.
"""

from __future__ import annotations

import asyncio
import importlib.util
import marshal
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from machine import confined_backends

from toolrt.codemode._code_runtime import CodeRunRequest
from toolrt.sandbox import PythonSandboxRuntime
from toolrt.sandbox._child import bootstrap
from toolrt.sandbox._host import code_table

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="children get the table on Linux only")

PACKAGE = Path(bootstrap.__file__).resolve().parent
MAGIC = importlib.util.MAGIC_NUMBER

BACKENDS = confined_backends()


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    """Every test builds its own tables (the runtime's cache would otherwise carry over)."""
    saved = dict(code_table._cache)
    code_table._cache.clear()
    yield
    code_table._cache.clear()
    code_table._cache.update(saved)


@pytest.fixture
def module_copy(tmp_path: Path) -> Path:
    for name in bootstrap.CHILD_FILES:
        shutil.copyfile(PACKAGE / name, tmp_path / name)
    return tmp_path


def table_file(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "table.bin"
    path.write_bytes(data)
    return str(path)


# --- host side ------------------------------------------------------------------------------------


def test_the_table_holds_every_child_module_but_the_script() -> None:
    data = code_table.compile_table(str(PACKAGE))
    assert data.startswith(MAGIC)
    table = marshal.loads(data[len(MAGIC) :])
    assert sorted(table) == sorted(bootstrap.CHILD_FILES[1:])
    assert "bootstrap.py" not in table  # Python compiles the script itself when it starts it
    for name, code in table.items():
        assert code.co_filename == str(PACKAGE / name)  # tracebacks name the same files as before


def test_the_table_file_is_the_hosts_and_read_only_to_anyone_else() -> None:
    path = code_table.code_table(str(PACKAGE))
    assert path is not None
    assert Path(path).read_bytes() == code_table.compile_table(str(PACKAGE))
    info, folder = os.stat(path), os.stat(os.path.dirname(path))
    assert (info.st_uid, folder.st_uid) == (os.geteuid(), os.geteuid())
    assert stat.S_IMODE(info.st_mode) == 0o644
    assert stat.S_IMODE(folder.st_mode) == 0o755


def test_the_table_is_built_once_and_rebuilt_when_a_source_changes(module_copy: Path) -> None:
    directory = str(module_copy)
    assert code_table.fresh_code_table(directory) is None
    first = code_table.code_table(directory)
    assert first is not None
    assert code_table.code_table(directory) == first
    assert code_table.fresh_code_table(directory) == first

    edited = module_copy / "bootstrap_io.py"
    edited.write_text(edited.read_text() + "\nEDITED_AFTER_BUILD = True\n")
    assert code_table.fresh_code_table(directory) is None
    second = code_table.code_table(directory)
    assert second is not None and second != first
    table = marshal.loads(Path(second).read_bytes()[len(MAGIC) :])
    assert "EDITED_AFTER_BUILD" in table["bootstrap_io.py"].co_names
    assert os.path.exists(first)  # a child being spawned may still be given the old one


def test_unreadable_or_broken_sources_give_no_table(module_copy: Path) -> None:
    (module_copy / "confine_policy.py").unlink()
    assert code_table.code_table(str(module_copy)) is None
    shutil.copyfile(PACKAGE / "confine_policy.py", module_copy / "confine_policy.py")
    (module_copy / "bootstrap_wire.py").write_text("def broken(:\n")
    assert code_table.code_table(str(module_copy)) is None


# --- child side -----------------------------------------------------------------------------------


def test_the_child_reads_the_table(tmp_path: Path) -> None:
    path = table_file(tmp_path, code_table.compile_table(str(PACKAGE)))
    table = bootstrap._precompiled(["bootstrap.py", "3", path])
    assert sorted(table) == sorted(bootstrap.CHILD_FILES[1:])


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x00\x01\x02\x03" + marshal.dumps({}), id="another-interpreter's-magic"),
        pytest.param(MAGIC + b"\xff\xfe not marshal", id="corrupt"),
        pytest.param(MAGIC + marshal.dumps([1, 2]), id="not-a-table"),
        pytest.param(b"", id="empty"),
    ],
)
def test_a_table_the_child_cannot_use_is_ignored(tmp_path: Path, payload: bytes) -> None:
    assert bootstrap._precompiled(["bootstrap.py", "3", table_file(tmp_path, payload)]) == {}


def test_no_table_or_a_missing_one_means_compiling(tmp_path: Path) -> None:
    assert bootstrap._precompiled(["bootstrap.py", "3"]) == {}
    assert bootstrap._precompiled(["bootstrap.py", "3", str(tmp_path / "gone.bin")]) == {}
    assert bootstrap._precompiled(["bootstrap.py", "3", str(tmp_path)]) == {}  # a directory


def test_the_loader_prefers_the_table_and_falls_back_to_the_source(tmp_path: Path) -> None:
    source = tmp_path / "probe_module.py"
    source.write_text("ORIGIN = 'source'\n")
    saved = dict(bootstrap._PRECOMPILED)
    try:
        bootstrap._PRECOMPILED.clear()
        bootstrap._PRECOMPILED["probe_module.py"] = compile("ORIGIN = 'table'\n", str(source), "exec")
        assert bootstrap._load_by_path("toolrt_test_probe_a", str(source)).ORIGIN == "table"
        assert "probe_module.py" not in bootstrap._PRECOMPILED  # used once, then dropped
        assert bootstrap._load_by_path("toolrt_test_probe_b", str(source)).ORIGIN == "source"
        bootstrap._PRECOMPILED["probe_module.py"] = "not code"
        assert bootstrap._load_by_path("toolrt_test_probe_c", str(source)).ORIGIN == "source"
    finally:
        bootstrap._PRECOMPILED.clear()
        bootstrap._PRECOMPILED.update(saved)
        for name in ("toolrt_test_probe_a", "toolrt_test_probe_b", "toolrt_test_probe_c"):
            sys.modules.pop(name, None)


# --- end to end -----------------------------------------------------------------------------------

_ASK_THE_CHILD = """
import sys
try:
    with open(sys.argv[2], "rb") as handle:
        handle.read(4)
    table = "readable"
except OSError as error:
    table = type(error).__name__
return {
    "argv": len(sys.argv),
    "marked": sys.modules["bootstrap_io"].__dict__.get("LOADED_FROM_THE_HOST_TABLE", False),
    "confine_marked": sys.modules["confine_seccomp"].__dict__.get("LOADED_FROM_THE_HOST_TABLE", False),
    "magic": sys.modules["_frozen_importlib_external"].MAGIC_NUMBER.hex(),
    "table": table,
    "left": len(sys.modules["__main__"]._PRECOMPILED),
}
"""


@pytest.mark.parametrize("backend", BACKENDS or [pytest.param("none", marks=pytest.mark.skip("no backend"))])
@pytest.mark.parametrize("pool_size", [0, 1], ids=["cold", "warm"])
async def test_children_run_the_hosts_code_and_their_program_cannot_read_it(
    backend: str, pool_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = code_table.compile_table

    def marked(directory: str) -> bytes:
        # The same table, with a marker the child's own compile of the sources never has.
        data = real(directory)
        table = marshal.loads(data[len(MAGIC) :])
        for name in ("bootstrap_io.py", "confine_seccomp.py"):
            path = os.path.join(directory, name)
            source = Path(path).read_text() + "\nLOADED_FROM_THE_HOST_TABLE = True\n"
            table[name] = compile(source, path, "exec", dont_inherit=True, optimize=0)
        return MAGIC + marshal.dumps(table)

    monkeypatch.setattr(code_table, "compile_table", marked)
    runtime = PythonSandboxRuntime(backend=backend, pool_size=pool_size)  # type: ignore[arg-type]
    try:
        await runtime.warm()
        result = await asyncio.wait_for(runtime.run(CodeRunRequest(program=_ASK_THE_CHILD, bindings=[])), 30)
    finally:
        await runtime.aclose()
    assert result.error is None, result.error
    assert result.meta["warm"] is (pool_size == 1)
    value = result.value
    if value["magic"] != MAGIC.hex():
        pytest.skip(f"the child's interpreter has another bytecode magic ({value['magic']}): it compiles")
    assert value["marked"] is True
    assert value["confine_marked"] is True  # loaded at confinement time, from the same table
    assert value["argv"] == 3
    assert value["left"] == 0  # nothing of the table outlives the boot
    assert value["table"] in ("PermissionError", "FileNotFoundError")  # confinement leaves it out
