"""The official JSON-Schema-Test-Suite (Draft 2020-12), run inside the subset.

The suite's files come from a registry package, not from a copy in this repository: the ``jsonschema``
source distribution on PyPI (pinned, its sha256 checked) carries the suite as ``json/tests/``, and
the first run unpacks its ``draft2020-12`` files (one per keyword of the subset) under
``.pytest_cache/``. A failed download fails the test, never skips it. Every case group whose schema is inside
the subset (after dropping the root's ``$schema``, which only names the dialect) runs; every test in
it whose data is lossless JSON must get the suite's verdict from our validator. The suite's untyped
bounds are rewritten into the subset's typed spelling by :func:`lift` (the same set of values). A
group outside the subset (``$ref``, type arrays, untyped ``enum``...) is skipped, and the counts
below pin how much of each file runs, so a subset change that silently stops exercising a keyword
fails here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest

from toolrt._json import is_lossless_json
from toolrt.schema import compile_validator, json_schema_violations

SDIST = "jsonschema==4.26.0"
SDIST_FILE = "jsonschema-4.26.0.tar.gz"
SDIST_SHA256 = "0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326"
CACHE = Path(__file__).resolve().parents[2] / ".pytest_cache" / "json-schema-test-suite"


@functools.cache
def suite_dir() -> Path:
    """The suite's Draft 2020-12 files, unpacked once from the pinned ``jsonschema`` sdist."""
    target = CACHE / "draft2020-12"
    if (target / "type.json").is_file():
        return target
    with tempfile.TemporaryDirectory() as download:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
        command += ["--no-deps", "--no-binary", ":all:", "--dest", download, SDIST]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, f"pip download {SDIST} failed:\n{done.stdout}{done.stderr}"
        archive = Path(download) / SDIST_FILE
        assert hashlib.sha256(archive.read_bytes()).hexdigest() == SDIST_SHA256, SDIST_FILE
        prefix = "jsonschema-4.26.0/json/tests/draft2020-12/"
        staging = CACHE / "staging"
        staging.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if (
                    member.isfile()
                    and member.name.startswith(prefix)
                    and "/" not in member.name[len(prefix) :]
                ):
                    extracted = tar.extractfile(member)
                    assert extracted is not None
                    (staging / member.name[len(prefix) :]).write_bytes(extracted.read())
        staging.replace(target)
    return target


# Groups of each file that run inside the subset (decision 0011 added the bound keywords). const and
# enum never run: the suite writes them untyped, with object and array values the subset refuses.
EXPECTED_GROUPS = {
    "additionalProperties": 4,
    "const": 0,
    "default": 3,
    "enum": 0,
    "exclusiveMaximum": 1,
    "exclusiveMinimum": 1,
    "format": 19,
    "items": 4,
    "maxItems": 2,
    "maxLength": 2,
    "maximum": 2,
    "minItems": 2,
    "minLength": 2,
    "minimum": 2,
    "multipleOf": 5,
    "oneOf": 5,
    "properties": 4,
    "required": 3,
    "type": 7,
    "uniqueItems": 2,
}


# The keywords that apply to one JSON type; an untyped schema ignores them for every other type.
FAMILIES = {
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "string": ("minLength", "maxLength"),
    "array": ("items", "minItems", "maxItems", "uniqueItems"),
    "object": ("properties", "required", "additionalProperties"),
}
BASE_TYPES = ("null", "boolean", "number", "string", "array", "object")
CHILDREN = ("items", "additionalProperties")


def lift(schema: Any) -> Any:
    """The same schema in the subset's spelling, where one exists (the tests are small: recursion).

    The suite writes ``{"minimum": 1.1}``: a number must be >= 1.1, any other value passes. The
    subset wants a type beside every bound, so an untyped node becomes a ``oneOf`` over the six
    disjoint JSON types, the bounds on their own type's branch: exactly the same set of values.
    ``true`` is ``{}``; ``false`` and other keywords have no spelling and stay (the group is skipped).
    """
    if schema is True:
        return {}
    if not isinstance(schema, dict):
        return schema
    node = {key: value for key, value in schema.items() if key != "$schema"}
    for key in CHILDREN:
        if isinstance(node.get(key), dict) or node.get(key) is True:
            node[key] = lift(node[key])
    if isinstance(node.get("properties"), dict):
        node["properties"] = {name: lift(child) for name, child in node["properties"].items()}
    if isinstance(node.get("oneOf"), list):
        node["oneOf"] = [lift(branch) for branch in node["oneOf"]]
    if "type" in node or "oneOf" in node:
        return node
    typed = {family: [key for key in keys if key in node] for family, keys in FAMILIES.items()}
    if not any(typed.values()):
        return node
    branches = []
    for base in BASE_TYPES:
        branch: dict[str, Any] = {"type": base}
        for key in typed.get(base, []):
            branch[key] = node.pop(key)
        branches.append(branch)
    return {**node, "oneOf": branches}


def _inside_subset(schema: Any) -> dict[str, Any] | None:
    lifted = lift(schema)
    if not isinstance(lifted, dict):
        return None  # the boolean schema false has no spelling in the subset
    return lifted if json_schema_violations(lifted) == [] else None


def _cases(name: str) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    groups = json.loads((suite_dir() / f"{name}.json").read_text(encoding="utf-8"))
    inside = []
    for group in groups:
        schema = _inside_subset(group["schema"])
        if schema is not None:
            inside.append((group["description"], schema, group["tests"]))
    return inside


@pytest.mark.parametrize("name", sorted(EXPECTED_GROUPS))
def test_the_suite_verdicts_hold_inside_the_subset(name: str) -> None:
    ran = 0
    for description, schema, tests in _cases(name):
        validator = compile_validator(schema)
        for test in tests:
            if not is_lossless_json(test["data"]):
                continue
            ran += 1
            violations = validator.validate(test["data"])
            assert (violations == []) is test["valid"], (description, test["description"], violations)
    assert len(_cases(name)) == EXPECTED_GROUPS[name]
    if EXPECTED_GROUPS[name]:
        assert ran > 0
