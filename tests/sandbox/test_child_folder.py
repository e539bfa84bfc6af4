"""The child's folder is the trust boundary: what runs inside the confined child is exactly the
modules of ``toolrt/sandbox/_child/``, they import only the standard library and each other, and the
bootstrap's one file list (``CHILD_FILES``, in load order) is the folder's contents.

Static checks (``ast``, nothing is run): a module that reached for ``toolrt`` or a third-party
package would work in the host's tests and break in the child, which runs ``python -I -S`` with no
site-packages, possibly as uid 65534 from a copy of these files alone.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from toolrt.sandbox._child import bootstrap

CHILD_DIR = Path(bootstrap.__file__).resolve().parent
PACKAGE = "toolrt.sandbox._child"
MODULES = sorted(path.name for path in CHILD_DIR.glob("*.py"))
SIBLINGS = {name.removesuffix(".py") for name in MODULES} - {"__init__"}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, anywhere in it (functions, ``try`` blocks and ``TYPE_CHECKING``
    included), as ``(line, dotted name)``; a relative import names its own package."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = f"{PACKAGE}.{module}" if module else PACKAGE
            found.append((node.lineno, module))
            if module == PACKAGE:  # ``from toolrt.sandbox._child import seccomp_tables``
                found.extend((node.lineno, f"{PACKAGE}.{alias.name}") for alias in node.names)
    return found


def sibling_of(name: str) -> str | None:
    """The child module ``name`` refers to (by package path or by bare name), else ``None``."""
    if name == PACKAGE:
        return ""
    if name.startswith(PACKAGE + "."):
        return name[len(PACKAGE) + 1 :].split(".", maxsplit=1)[0]
    return name if name in SIBLINGS else None


@pytest.mark.parametrize("module", MODULES)
def test_child_module_imports_only_the_standard_library_and_its_folder(module: str) -> None:
    outside = []
    for line, name in imported_modules(CHILD_DIR / module):
        sibling = sibling_of(name)
        if sibling is not None:
            assert sibling == "" or sibling in SIBLINGS, (
                f"{module}:{line} imports {name}: no such child module"
            )
            continue
        if name.split(".")[0] not in sys.stdlib_module_names:
            outside.append(f"{module}:{line} imports {name}")
    assert not outside, "child code must import only the standard library and its own folder: " + ", ".join(
        outside
    )


def test_the_check_sees_what_it_must_refuse(tmp_path: Path) -> None:
    """Guards the test above: each kind of import it must see is found, at any depth."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        "try:\n    from toolrt.sandbox._child.confine_policy import X\nexcept ImportError:\n"
        "    from confine_policy import X\n"
        "def late():\n    import httpx\n    from toolrt import thing\n"
        "if False:\n    from . import seccomp_tables\n"
    )
    names = sorted(name for _, name in imported_modules(probe))
    assert names == sorted(
        [
            "os",
            "toolrt.sandbox._child.confine_policy",
            "confine_policy",
            "httpx",
            "toolrt",
            "toolrt.sandbox._child",
            "toolrt.sandbox._child.seccomp_tables",
        ]
    )
    outside = [
        name
        for name in names
        if sibling_of(name) is None and name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert sorted(outside) == ["httpx", "toolrt"]


def test_child_files_are_the_folder() -> None:
    """``CHILD_FILES`` names every module of the folder (the package ``__init__``, which the child
    never loads, aside), the script first, each once."""
    assert bootstrap.CHILD_FILES[0] == "bootstrap.py"
    assert len(set(bootstrap.CHILD_FILES)) == len(bootstrap.CHILD_FILES)
    assert sorted(bootstrap.CHILD_FILES) == sorted(name for name in MODULES if name != "__init__.py")


def test_child_files_are_in_load_order() -> None:
    """The bootstrap loads the modules in ``CHILD_FILES`` order (after itself): every module's
    sibling imports come before it, so each finds its imports already loaded."""
    order = [name.removesuffix(".py") for name in bootstrap.CHILD_FILES[1:]]
    for position, module in enumerate(order):
        needs = {sibling_of(name) for _, name in imported_modules(CHILD_DIR / f"{module}.py")}
        needs -= {None, "", module}
        later = sorted(need for need in needs if need not in order[:position])
        assert not later, f"{module} imports {later}, which load after it"


def test_no_child_module_shadows_the_standard_library() -> None:
    """The child registers its modules in ``sys.modules`` by bare name, beside the program's own
    imports: one named like a standard module would replace it."""
    assert not SIBLINGS & set(sys.stdlib_module_names)
