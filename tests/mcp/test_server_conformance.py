"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, server scenarios) against
toolrt's native serving: one run per session, read by every test below.

The run serves tests/mcp/conformance_server.py, the suite's fixture tools (``test_simple_text``,
``test_image_content``, ``test_tool_with_progress``, ...) written as ordinary toolrt tools and
served with ``serve_http``: the ``tools-call-*`` scenarios then check toolrt's content, error,
progress and logging mappings, not the absence of a tool. The protocol scenarios run once more
against ``toolrt mcp serve`` itself, the command a client launches.

The baseline (tests/mcp/conformance-server-expected-failures.yml) lists the scenarios toolrt does not
pass, each with its reason; the suite itself fails the run on a new failure *and* on a listed scenario
that passes, so the file stays exact.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_server_support import child_env, free_port, http_server, node_bin, stop, wait_listening

BASELINE = Path(__file__).parent / "conformance-server-expected-failures.yml"
FIXTURE = Path(__file__).parent / "conformance_server.py"
PROTOCOL_SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
)


@contextlib.contextmanager
def fixture_server() -> Iterator[str]:
    """tests/mcp/conformance_server.py as a child process on a free port; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(FIXTURE), str(port)],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(process, port, "the fixture server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def read_checks(results: Path) -> dict[str, list[dict[str, object]]]:
    checks = {}
    for directory in results.iterdir():
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", directory.name)
        checks[scenario] = json.loads((directory / "checks.json").read_text())
    return checks


@dataclass(frozen=True)
class SuiteRun:
    returncode: int
    output: str
    checks: dict[str, list[dict[str, object]]]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, node_modules: Path) -> Iterator[SuiteRun]:
    results = tmp_path_factory.mktemp("conformance")
    with fixture_server() as url:
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
    yield SuiteRun(done.returncode, done.stdout + done.stderr, read_checks(results))


@pytest.fixture(scope="module")
def cli_checks(
    tmp_path_factory: pytest.TempPathFactory, node_modules: Path
) -> dict[str, list[dict[str, object]]]:
    """The protocol scenarios against ``toolrt mcp serve --transport http`` itself."""
    root = tmp_path_factory.mktemp("root")
    (root / "notes.md").write_text("# notes\n")
    results = tmp_path_factory.mktemp("conformance-cli")
    with http_server("--root", str(root), "--mode", "native") as url:
        for scenario in PROTOCOL_SCENARIOS:
            subprocess.run(
                [
                    *node_bin("conformance"),
                    "server",
                    "--url",
                    url,
                    "--scenario",
                    scenario,
                    "-o",
                    str(results),
                ],
                check=False,
                capture_output=True,
                text=True,
                timeout=120,
                env=child_env(),
            )
    return read_checks(results)


def test_the_suite_matches_the_baseline_exactly(suite: SuiteRun) -> None:
    assert suite.returncode == 0, suite.output[-4000:]


def test_the_protocol_scenarios_a_tool_server_must_pass_pass(suite: SuiteRun) -> None:
    for scenario in PROTOCOL_SCENARIOS:
        checks = suite.checks[scenario]
        assert checks, scenario
        assert {check["status"] for check in checks} == {"SUCCESS"}, (scenario, checks)


def test_the_protocol_scenarios_pass_through_the_cli_too(
    cli_checks: dict[str, list[dict[str, object]]],
) -> None:
    for scenario in PROTOCOL_SCENARIOS:
        checks = cli_checks[scenario]
        assert checks, scenario
        assert {check["status"] for check in checks} == {"SUCCESS"}, (scenario, checks)


def test_the_served_tools_map_content_errors_progress_and_logs(suite: SuiteRun) -> None:
    # The scenarios that check real serving behaviour on ordinary toolrt tools.
    for scenario in (
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-with-logging",
        "logging-set-level",
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
