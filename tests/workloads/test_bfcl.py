"""An external workload: BFCL v4's eight executable back ends, replayed through toolrt three ways.

``bfcl-eval`` (pinned, installed without its heavy dependencies into ``.pytest_cache/``) ships the back
ends and 200 multi-turn entries with 1,142 ground-truth calls. Every public method is registered
with plain ``@tool`` (``tool(bound_method)``), every entry is replayed natively
(``runtime.call``), through the ``Agent`` loop (one parallel step per turn) and as Code Mode
programs in the real sandbox, and each call's outcome and every instance's final state are
compared with calling the methods directly (see ``bfcl_replay``).

Where BFCL's own hints are wrong, toolrt refuses, as documented: ``KNOWN_BUGS`` lists each bug
with its reason and the entries it hits; the oracle expects the refusal exactly there. The native
and agent replays of all 200 entries take seconds and run in the normal suite; Code Mode's starts a
sandboxed child per turn (734 of them), so its full replay is ``slow`` (``.ci/run`` runs it with
``-m slow``) and the normal suite replays a subset: the first entries of each back end and of each bug.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import bfcl_replay
import pytest
from bfcl_replay import Entry, KnownBug

from toolrt import RUN_CODE_NAME, ToolRuntime, tool
from toolrt.loop import SystemPrompt, connect_runtime, runtime_chain
from toolrt.sandbox import PythonSandboxRuntime

REPO = Path(__file__).resolve().parents[2]


def _ids(*numbers: int) -> frozenset[str]:
    return frozenset(f"multi_turn_base_{number}" for number in numbers)


def _grouped_texts(value: Any) -> list[Any]:
    messages = value.get("messages", {}) if isinstance(value, dict) else {}
    return [text for texts in messages.values() for text in texts]


KNOWN_BUGS = (
    KnownBug(
        method="compute_exchange_rate",
        code="INVALID_TOOL_OUTPUT",
        message='returned invalid output: "value" must be a number',
        reason="hinted `-> float`, returns `{'exchanged_value': float}`",
        shows=lambda args, value: isinstance(value, dict),
        entries=_ids(150, 151, 160, 162, 164, 167, 168, 171, 173, 174, 180, 196),
    ),
    KnownBug(
        method="send_message",
        code="INVALID_TOOL_OUTPUT",
        message='returned invalid output: "value.message_id" must match exactly one oneOf branch',
        reason="hinted `-> Dict[str, Union[str, bool]]`, returns `message_id` as a dict `{'new_id': int}`",
        shows=lambda args, value: isinstance(value, dict) and isinstance(value.get("message_id"), dict),
        entries=_ids(
            14,
            17,
            33,
            40,
            41,
            43,
            51,
            62,
            72,
            91,
            95,
            97,
            101,
            103,
            111,
            114,
            131,
            137,
            138,
            141,
            143,
            145,
            149,
            168,
            171,
            172,
            184,
            199,
        ),
    ),
    KnownBug(
        method="view_messages_sent",
        code="INVALID_TOOL_OUTPUT",
        message='returned invalid output: "value.messages" must match exactly one oneOf branch',
        reason=(
            "hinted `-> Dict[str, Union[Dict[str, List[str]], str]]`; the scenarios' inboxes store a"
            " message as a list (or a dict), so the grouped messages are not lists of strings"
        ),
        shows=lambda args, value: any(not isinstance(text, str) for text in _grouped_texts(value)),
        entries=_ids(17, 33, 72, 91, 95, 111, 114, 145, 149, 171, 172, 184),
    ),
    KnownBug(
        method="logarithm",
        code="INVALID_TOOL_OUTPUT",
        message="value.result: mpmath.ctx_mp_python.mpf is not a JSON type",
        reason="hinted `-> Dict[str, float]`, returns an mpmath `mpf` (not a float, not JSON)",
        shows=lambda args, value: (
            isinstance(value, dict) and type(value.get("result")).__module__.startswith("mpmath")
        ),
        entries=_ids(32, 49, 57, 59),
    ),
    KnownBug(
        method="close_ticket",
        code="INVALID_ARGS",
        message='invalid arguments: "ticket_id" must be an integer',
        reason="hinted `ticket_id: int`; the ground truth passes the scenario's string id 'ticket_001'",
        shows=lambda args, value: isinstance(args.get("ticket_id"), str),
        entries=_ids(173),
    ),
)

SUBSET_PER_BACKEND = 2  # the normal suite's subset: the first entries involving each back end, plus the bugs'


@pytest.fixture(scope="session")
def bfcl_root() -> Path:
    """The pinned ``bfcl-eval`` (and mpmath), installed once into pytest's cache folder.

    ``.pytest_cache/`` is ignored by git and by the repository's text checks (BFCL's data is full
    of tokens shaped like rule ids), and survives between runs, so only the first run installs.
    """
    return bfcl_replay.install_bfcl(REPO / ".pytest_cache" / "bfcl")


@pytest.fixture(scope="session")
def entries(bfcl_root: Path) -> list[Entry]:
    """All 200 multi-turn base entries with their ground truth."""
    return bfcl_replay.load_entries(bfcl_root)


@pytest.fixture(scope="session")
def subset(entries: list[Entry]) -> list[Entry]:
    """A few entries per back end, and at least one entry for each known bug."""
    chosen: dict[str, Entry] = {}
    for backend in bfcl_replay.BACKENDS:
        for entry in [entry for entry in entries if backend in entry.classes][:SUBSET_PER_BACKEND]:
            chosen[entry.id] = entry
    for bug in KNOWN_BUGS:
        chosen[_first(bug)] = next(entry for entry in entries if entry.id == _first(bug))
    return list(chosen.values())


@pytest.fixture
async def sandbox() -> AsyncIterator[PythonSandboxRuntime]:
    """One real sandbox runtime for every program of a test (its pool is reused across entries)."""
    runtime = PythonSandboxRuntime()
    try:
        yield runtime
    finally:
        await runtime.aclose()


def test_the_workload_is_the_published_one(entries: list[Entry]) -> None:
    assert len(entries) == 200
    assert bfcl_replay.calls_in(entries) == 1142
    assert {name for entry in entries for name in entry.classes} == set(bfcl_replay.BACKENDS)


async def test_every_public_method_of_the_eight_back_ends_registers_with_plain_tool(bfcl_root: Path) -> None:
    # Real hints: Dict[str, Union[...]] returns, Optional/Union/List parameters, docstrings in the
    # Google style with "(type)" after each name. Nothing needs an annotation of toolrt's.
    sandbox = PythonSandboxRuntime(pool_size=0)  # never started: only its language shapes the SDK
    runtime = ToolRuntime(mode="code", code_runtime=sandbox)
    try:
        registered = []
        for class_name in bfcl_replay.BACKENDS:
            instance = bfcl_replay.backend_class(class_name)()
            for name, method in bfcl_replay.public_methods(instance):
                definition = tool(method)  # a refusal raises TypeError naming the parameter
                runtime.register(definition)
                registered.append(name)
                assert definition.name == name
                assert definition.parameters["type"] == "object"
        assert len(registered) == len(set(registered)) == 128  # no two back ends share a name
        assert {schema["name"] for schema in runtime.schemas()} == {*registered, RUN_CODE_NAME}
        prompt = SystemPrompt(chain=runtime_chain(runtime))
        connect_runtime(prompt, runtime)
        sdk = (await prompt.assemble()).section("tools:sdk")
        assert sdk is not None
        assert all(f"async def {name}(self" in sdk.text for name in registered)
    finally:
        runtime.close()
        await sandbox.aclose()


def _first(bug: KnownBug) -> str:
    return min(bug.entries, key=lambda entry_id: int(entry_id.rsplit("_", 1)[1]))


def test_known_bugs_hit_exactly_the_listed_entries(entries: list[Entry]) -> None:
    hit: dict[str, set[str]] = {bug.method: set() for bug in KNOWN_BUGS}
    for entry in entries:
        for _, _, bug in bfcl_replay.replay_direct(entry, KNOWN_BUGS).hits:
            hit[bug.method].add(entry.id)
    assert hit == {bug.method: set(bug.entries) for bug in KNOWN_BUGS}


async def test_known_bugs_are_refused_with_the_documented_code(entries: list[Entry]) -> None:
    by_id = {entry.id: entry for entry in entries}
    for bug in KNOWN_BUGS:
        entry = by_id[_first(bug)]
        direct = bfcl_replay.replay_direct(entry, KNOWN_BUGS)
        native = await bfcl_replay.replay_native(entry)
        turn, index, _ = next(hit for hit in direct.hits if hit[2] is bug)
        refused = native.outcomes[turn][index]
        assert refused.failed, (bug.method, refused)
        assert refused.code == bug.code
        assert bug.message in (refused.message or "")


async def test_the_comparison_sees_a_skipped_call_and_a_changed_value(entries: list[Entry]) -> None:
    # Without this, a replay that silently did nothing would pass: the oracle must tell them apart.
    entry = entries[0]  # turn 0: cd, mkdir, mv in the file system
    direct = bfcl_replay.replay_direct(entry, KNOWN_BUGS)
    assert bfcl_replay.differences(entry, "native", direct, await bfcl_replay.replay_native(entry)) == []
    skipped = Entry(entry.id, entry.classes, entry.initial_config, (entry.turns[0][:-1], *entry.turns[1:]))
    tampered = bfcl_replay.replay_direct(skipped, KNOWN_BUGS)
    tampered.outcomes[0].append(bfcl_replay.ok("not what the call returned"))
    found = bfcl_replay.differences(entry, "native", direct, tampered)
    assert any("turn 0" in line for line in found)
    assert any("final state of GorillaFileSystem differs" in line for line in found)


async def _replay(path: str, entry: Entry, sandbox: PythonSandboxRuntime | None) -> bfcl_replay.Replay:
    if path == "native":
        return await bfcl_replay.replay_native(entry)
    if path == "agent":
        return await bfcl_replay.replay_agent(entry)
    assert sandbox is not None
    return await bfcl_replay.replay_code(entry, sandbox)


async def _mismatches(path: str, chosen: list[Entry], sandbox: PythonSandboxRuntime | None) -> list[str]:
    found: list[str] = []
    for entry in chosen:
        direct = bfcl_replay.replay_direct(entry, KNOWN_BUGS)
        found += bfcl_replay.differences(entry, path, direct, await _replay(path, entry, sandbox))
    return found


async def test_a_subset_replays_like_direct_calls_as_code_mode_programs(
    subset: list[Entry], sandbox: PythonSandboxRuntime
) -> None:
    assert await _mismatches("code", subset, sandbox) == []


@pytest.mark.parametrize("path", ["native", "agent"])
async def test_every_entry_replays_like_direct_calls(path: str, entries: list[Entry]) -> None:
    assert await _mismatches(path, entries, None) == []


@pytest.mark.slow
async def test_every_entry_replays_like_direct_calls_as_code_mode_programs(
    entries: list[Entry], sandbox: PythonSandboxRuntime
) -> None:
    assert await _mismatches("code", entries, sandbox) == []
