"""The official conformance suite's client scenarios, against toolrt's MCP client.

One session-scoped run (``@modelcontextprotocol/conformance client``, one process per scenario)
drives tests/mcp/conformance_client.py, which connects through :class:`toolrt.mcp.McpConnections`;
the tests below read its results. Known failures are listed, each with its reason, in
tests/mcp/conformance-client-expected-failures.yml (the suite itself fails a run on a new failure
and on a stale entry).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
EXPECTED_FAILURES = HERE / "conformance-client-expected-failures.yml"
CLIENT = HERE / "conformance_client.py"
SCENARIOS = ("initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults")


@dataclass
class ScenarioRun:
    returncode: int
    output: str
    checks: list[dict]


def expected_failures() -> set[str]:
    return {
        line.strip()[2:].strip()
        for line in EXPECTED_FAILURES.read_text().splitlines()
        if line.strip().startswith("- ")
    }


@pytest.fixture(scope="session")
def conformance(launch, tmp_path_factory) -> dict[str, ScenarioRun]:
    suite = launch.modules / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    runs: dict[str, ScenarioRun] = {}
    for scenario in SCENARIOS:
        workdir = tmp_path_factory.mktemp(scenario.replace("/", "-"))
        completed = subprocess.run(
            [
                launch.node,
                str(suite),
                "client",
                "--command",
                f"{sys.executable} {CLIENT}",
                "--scenario",
                scenario,
                "--expected-failures",
                str(EXPECTED_FAILURES),
                "--output-dir",
                str(workdir / "results"),
            ],
            check=False,
            cwd=workdir,
            env=launch.node_env(),
            capture_output=True,
            text=True,
            timeout=180,
        )
        found = sorted(workdir.glob("results/**/checks.json"))
        checks = json.loads(found[-1].read_text()) if found else []
        runs[scenario] = ScenarioRun(completed.returncode, completed.stdout + completed.stderr, checks)
    return runs


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario(conformance, scenario):
    run = conformance[scenario]
    # Exit 0 means: passed, or failed and listed as expected (a listed pass is a stale entry: exit 1).
    assert run.returncode == 0, run.output[-4000:]
    assert run.checks, f"no checks.json for {scenario}:\n{run.output[-2000:]}"
    failures = [check for check in run.checks if check.get("status") == "FAILURE"]
    if scenario in expected_failures():
        assert failures, f"{scenario} passes now: remove it from {EXPECTED_FAILURES.name}"
    else:
        assert failures == [], failures


def test_the_expected_failures_file_is_short_and_names_only_scenarios_that_run():
    listed = expected_failures()
    assert listed <= set(SCENARIOS)
    assert len(listed) <= 3
