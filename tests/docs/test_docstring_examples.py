"""Every ``>>>`` example in toolrt's docstrings runs, so the reference cannot drift from the code.

The examples are part of the public documentation (the brief asks for a short example where it
helps); one that no longer holds fails here, naming its module.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import toolrt

MODULES = sorted(name for _, name, _ in pkgutil.walk_packages(toolrt.__path__, "toolrt."))


@pytest.mark.parametrize("name", ["toolrt", *MODULES])
def test_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert outcome.failed == 0, f"{outcome.failed} of {outcome.attempted} docstring examples in {name} failed"


def test_the_examples_are_found() -> None:
    """Guards the test above against finding nothing (a walk that missed the package)."""
    modules = [importlib.import_module(name) for name in MODULES]
    attempted = sum(doctest.testmod(module, report=False).attempted for module in modules)
    assert attempted >= 40
    assert "toolrt.schema._type_hints" in MODULES and "toolrt.sandbox._host.protocol" in MODULES
