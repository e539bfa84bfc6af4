"""Every ``python`` block in the README and the user guide runs as written (their claims are tested)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in [DOCS.parent / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((page.name, line, match.group(1)))
    return found


@pytest.mark.parametrize(("page", "line", "code"), _blocks(), ids=lambda value: str(value)[:40])
def test_documented_example_runs(page: str, line: int, code: str) -> None:
    """Run one block in a fresh namespace; its own asserts check what the prose claims."""
    compiled = compile(code, f"{page}:{line}", "exec")
    exec(compiled, {"__name__": f"docs_{page}_{line}"})


def test_the_guide_has_examples() -> None:
    assert len(_blocks()) >= 6
