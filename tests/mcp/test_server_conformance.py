"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, server scenarios) against
``toolrt mcp serve --transport http``: one run per session, read by every test below.

The baseline (tests/mcp/conformance-server-expected-failures.yml) lists the scenarios toolrt does not
pass, each with its reason; the suite itself fails the run on a new failure *and* on a listed scenario
that passes, so the file stays exact.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_server_support import child_env, http_server, node_bin

BASELINE = Path(__file__).parent / "conformance-server-expected-failures.yml"


@dataclass(frozen=True)
class SuiteRun:
    returncode: int
    output: str
    checks: dict[str, list[dict[str, object]]]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, node_modules: Path) -> Iterator[SuiteRun]:
    root = tmp_path_factory.mktemp("root")
    (root / "notes.md").write_text("# notes\n")
    results = tmp_path_factory.mktemp("conformance")
    with http_server("--root", str(root), "--mode", "native") as url:
        done = subprocess.run(
            [
                *node_bin("conformance"),
                "server",
                "--url",
                url,
                "--expected-failures",
                str(BASELINE),
                "-o",
                str(results),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=240,
            env=child_env(),
        )
    checks = {}
    for directory in results.iterdir():
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", directory.name)
        checks[scenario] = json.loads((directory / "checks.json").read_text())
    yield SuiteRun(done.returncode, done.stdout + done.stderr, checks)


def test_the_suite_matches_the_baseline_exactly(suite: SuiteRun) -> None:
    assert suite.returncode == 0, suite.output[-4000:]


def test_the_protocol_scenarios_a_tool_server_must_pass_pass(suite: SuiteRun) -> None:
    for scenario in (
        "server-initialize",
        "ping",
        "tools-list",
        "dns-rebinding-protection",
        "server-sse-multiple-streams",
    ):
        checks = suite.checks[scenario]
        assert checks, scenario
        assert {check["status"] for check in checks} == {"SUCCESS"}, (scenario, checks)


def test_every_expected_failure_has_a_reason() -> None:
    entries = [line.strip() for line in BASELINE.read_text().splitlines() if line.strip().startswith("- ")]
    assert entries
    for entry in entries:
        name, _, reason = entry[2:].partition(" # ")
        assert re.fullmatch(r"[a-z0-9-]+", name), entry
        assert len(reason.strip()) > 10, f"no reason given for {name}"


def test_the_baseline_names_only_scenarios_that_failed(suite: SuiteRun) -> None:
    listed = {
        line.strip()[2:].partition(" # ")[0]
        for line in BASELINE.read_text().splitlines()
        if line.strip().startswith("- ")
    }
    failed = {
        name for name, checks in suite.checks.items() if any(check["status"] == "FAILURE" for check in checks)
    }
    assert listed == failed
