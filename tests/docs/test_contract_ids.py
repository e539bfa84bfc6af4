"""Every rule id and contract section the repository cites is defined in ``docs/contract.md``, and
nothing in the repository points at a file outside it.

Code, tests and docs cite rules by id ("contract P6", "E6–E21") and sections by number ("contract
§2.13"). A citation a reader cannot follow is worse than none, so a new id must be added to the
contract before it is cited, and a renamed test file must be renamed in the contract too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"

# Directories that are not the project's own text (tool caches, the virtualenv, git itself, the
# npm packages the MCP tests install), and generated files (npm's lock file lists licence names
# that the id pattern would read as citations).
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        "node_modules",
    }
)
SKIPPED_FILES = frozenset({"package-lock.json"})

# A rule id: a prefix the contract uses, then one or two digits, as a whole word. The prefixes are
# listed (not "any capitals + digits") so that lint codes (E501, PLR2004), hex code units (DF30),
# ABI names (LP64, IA32), timestamps (T09:00) and quarters (Q1) are not read as ids.
ID_PREFIXES = (
    "S-DSL",
    "RS", "RX", "CC", "PO", "PA", "SC", "EV", "CR", "TS", "PY", "JS", "SK", "SD",
    "SX", "SB", "SA", "SW", "AL", "SL", "PF", "AP", "TO", "SP", "FT", "CL", "BM", "MC", "BA", "OT",
    "A", "B", "C", "D", "E", "G", "J", "K", "L", "M", "P", "R", "S", "U", "V", "X",
)  # fmt: skip
ID = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ID_PREFIXES)) + r")[0-9]{1,2}(?!\w)")

# How the contract defines an id: in bold, e.g. ``- **B7 A binding call** ...``.
DEFINITION = re.compile(r"\*\*(" + ID.pattern + r")")

# Tokens shaped like ids that are not citations, and the only files they may appear in (this file
# names them too).
_SELF = "tests/docs/test_contract_ids.py"
NOT_IDS: dict[str, tuple[str, frozenset[str]]] = {
    "C0": (
        "Unicode's C0 control set (U+0000..U+001F)",
        frozenset({_SELF, "docs/contract.md", "src/toolrt/_json.py", "src/toolrt/codemode/_py_names.py"}),
    ),
    "A9": (
        "an object key in the SDK renderer's property tests",
        frozenset({_SELF, "tests/codemode/test_sdk_typescript.py"}),
    ),
    "V8": (
        "the JavaScript engine Deno runs on",
        frozenset(
            {
                _SELF,
                "docs/contract.md",
                "docs/code-mode.md",
                "docs/sandbox.md",
                "docs/limits.md",
                "benchmarks/codemode.py",
                "src/toolrt/sandbox/_child/command_launcher.py",
                "src/toolrt/sandbox/_child/bootstrap.ts",
                "src/toolrt/sandbox/_host/deno_process.py",
                "src/toolrt/sandbox/_host/deno_runtime.py",
                "src/toolrt/sandbox/_host/limits.py",
                "tests/sandbox/test_deno_runtime.py",
                "tests/sandbox/test_deno_attacks.py",
            }
        ),
    ),
}

# A section citation: "§2.13", "§ 5.1".
SECTION = re.compile(r"§\s?([0-9]+(?:\.[0-9]+)*)")
HEADING = re.compile(r"^#{2,4} ([0-9]+(?:\.[0-9]+)*) ", re.MULTILINE)

# Pointers at files outside the repository: the reference material the port was written from
# lived beside the repository, where a user of it cannot follow. (Built from parts, so that this
# file does not match itself.)
OUTSIDE = re.compile(
    "|".join(
        (
            "shared" + "/reference",
            r"\.\./" + "shared",
            "upstream" + "-spec",
            "seed" + "-README",
            "perf" + "-baselines",
            "python" + "-peers",
            r"\banchors(?:-[0-9-]+)?" + r"\.md",
            # docs/sandbox.md has no numbered sections: a numbered one is the outside survey's.
            r"sandbox\.md`?\s*" + "§",
        )
    )
)

# A link to one of the contract's headings.
ANCHOR_LINK = re.compile(r"contract\.md#([\w-]+)")
TEST_PATH = re.compile(r"\btests/[\w/]+\.py\b")


def _text_files() -> Iterator[tuple[str, str]]:
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT)
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in relative.parts):
            continue
        if not path.is_file() or path.name in SKIPPED_FILES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        yield relative.as_posix(), text


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _contract() -> str:
    return CONTRACT.read_text(encoding="utf-8")


def test_every_cited_id_is_defined_in_the_contract() -> None:
    defined = {match.group(1) for match in DEFINITION.finditer(_contract())}
    unknown = []
    for name, text in _text_files():
        for match in ID.finditer(text):
            token = match.group(0)
            if token in defined:
                continue
            reason_files = NOT_IDS.get(token)
            if reason_files is not None and name in reason_files[1]:
                continue
            unknown.append(f"{name}:{_line(text, match.start())}: {token}")
    assert not unknown, "ids cited but not defined in docs/contract.md:\n" + "\n".join(unknown)


def test_every_cited_section_exists_in_the_contract() -> None:
    sections = set(HEADING.findall(_contract()))
    unknown = [
        f"{name}:{_line(text, match.start())}: §{match.group(1)}"
        for name, text in _text_files()
        for match in SECTION.finditer(text)
        if match.group(1) not in sections
    ]
    assert not unknown, "sections cited but not in docs/contract.md:\n" + "\n".join(unknown)


def test_nothing_points_outside_the_repository() -> None:
    outside = [
        f"{name}:{_line(text, match.start())}: {match.group(0)}"
        for name, text in _text_files()
        for match in OUTSIDE.finditer(text)
    ]
    assert not outside, "references to files outside the repository:\n" + "\n".join(outside)


def test_every_link_to_a_contract_heading_resolves() -> None:
    anchors = {_slug(line.lstrip("#")) for line in _contract().splitlines() if line.startswith("#")}
    broken = [
        f"{name}:{_line(text, match.start())}: #{match.group(1)}"
        for name, text in _text_files()
        for match in ANCHOR_LINK.finditer(text)
        if match.group(1) not in anchors
    ]
    # The contract links to its own headings as "#anchor" in its table of contents.
    contract = _contract()
    broken += [
        f"docs/contract.md:{_line(contract, match.start())}: #{match.group(1)}"
        for match in re.finditer(r"\]\(#([\w-]+)\)", contract)
        if match.group(1) not in anchors
    ]
    assert not broken, "links to missing contract headings:\n" + "\n".join(broken)


def test_every_test_file_the_contract_names_exists() -> None:
    missing = sorted({path for path in TEST_PATH.findall(_contract()) if not (ROOT / path).is_file()})
    assert not missing, f"docs/contract.md names test files that do not exist: {missing}"


def test_the_id_pattern_ignores_what_is_not_an_id() -> None:
    """The scan must not flag lint codes, hex code units, ABI names, timestamps or quarters."""
    for text in ("noqa: E501", "PLR2004", "D800 DF30", "LP64", "IA32", '"T09:00:00Z"', "Q1 2026", "E2B"):
        assert ID.search(text) is None, text
    for text in ("contract P6", "E6–E21", "S-DSL4", "RS4", "(B7)", "SA36"):
        assert ID.search(text) is not None, text
