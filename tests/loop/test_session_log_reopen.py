"""Reopening a large session log (contract CS5, SL1-SL4): the same events and conversation as were
written, every check kept, and the garbage collector left as it was found.

What a user does: run a long session (tens of thousands of events), restart, and resume it. Reading
pauses the cyclic collector while the file becomes objects (reopening cost grew faster than the log
without that, decision 0012); what must not change is what is read, what is refused, and the
collector's state afterwards.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import text
from toolrt import ToolFailure, ToolSuccess
from toolrt.loop import (
    SessionLog,
    SessionLogCorruptError,
    model_assistant_event,
    model_user_event,
    tool_call_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)
from toolrt.loop._messages import AssistantMessage, ToolCall, Usage
from toolrt.lowlevel import ToolError, ToolErrorInfo

EVENTS = 30_000


def write_session(path: Path, events: int) -> SessionLog:
    """A realistic session: turns of a user message, a parallel pair of tool calls with their
    results (one failing), and a closing assistant message, until ``events`` are written."""
    log = SessionLog.create(path)
    turn = 0
    while len(log) < events:
        log.append(*turn_start_event(turn, agent="main"))
        log.append(*model_user_event(f"Summarise src/module_{turn}.py — und prüfe die Tests 🧪"))
        calls = (
            ToolCall(f"c{turn}a", "read_file", json.dumps({"path": f"src/module_{turn}.py"})),
            ToolCall(f"c{turn}b", "grep", json.dumps({"pattern": "def ", "limit": 20})),
        )
        log.append(
            *model_assistant_event(AssistantMessage("Reading.", calls, None, "tool_calls"), Usage(900, 40))
        )
        for call in calls:
            log.append(
                *tool_call_event(call.id, call.name, call.arguments, json.loads(call.arguments), agent="main")
            )
        failure = ToolFailure(
            error=ToolError("no such pattern", ToolErrorInfo("ToolError", "TOOL_ERROR")),
            content=text("Error: no such pattern"),
        )
        log.append(*tool_result_event(calls[1].id, "grep", failure))
        log.append(
            *tool_result_event(calls[0].id, "read_file", ToolSuccess(value=None, content=text("x = 1\n" * 8)))
        )
        log.append(
            *model_assistant_event(
                AssistantMessage(f"Module {turn} sets x.", (), None, "stop"), Usage(950, 12)
            )
        )
        log.append(*turn_end_event("stop", turn=turn))
        turn += 1
    return log


@pytest.fixture(scope="module")
def large_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, SessionLog]]:
    path = tmp_path_factory.mktemp("reopen") / "session.jsonl"
    log = write_session(path, EVENTS)
    log.close()
    yield path, log


def test_a_large_log_reopens_with_every_event_and_the_same_conversation(
    large_log: tuple[Path, SessionLog],
) -> None:
    path, written = large_log
    with SessionLog.resume(path) as reopened:
        assert len(reopened) == len(written) >= EVENTS
        assert reopened.events() == written.events()
        assert reopened.messages() == written.messages()
        assert reopened.next_seq == len(written)
    assert SessionLog.read(path).events == written.events()


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_leaves_the_collector_as_it_found_it(
    large_log: tuple[Path, SessionLog], enabled: bool
) -> None:
    path, _ = large_log
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with SessionLog.resume(path) as log:
            assert gc.isenabled() is enabled
            log.messages()
            assert gc.isenabled() is enabled
        SessionLog.read(path)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def damaged(path: Path, tmp_path: Path, line_number: int, replacement: bytes) -> Path:
    lines = path.read_bytes().split(b"\n")
    lines[line_number - 1] = replacement
    target = tmp_path / "damaged.jsonl"
    target.write_bytes(b"\n".join(lines))
    return target


@pytest.mark.parametrize(
    ("replacement", "reason"),
    [
        (b'{"seq":20000,"type":"turn/start"', "invalid JSON"),
        (b'{"seq":7,"type":"myapp/x","time":1.0,"data":{}}', '"seq" is 7, expected 20000'),
        (b'{"seq":20000,"type":"myapp/x","time":1.0,"data":{"x":NaN}}', "NaN is not JSON"),
        (b'{"seq":20000,"type":"myapp/x","time":1.0,"data":{"x":"\\ud800"}}', "lone surrogate"),
        (b'{"seq":20000,"type":"myapp/x","time":1.0,"data":{"x":-0.0}}', "-0.0"),
    ],
)
def test_a_corrupt_line_deep_in_a_large_log_is_refused_with_its_number_and_the_collector_restored(
    large_log: tuple[Path, SessionLog], tmp_path: Path, replacement: bytes, reason: str
) -> None:
    path, _ = large_log
    target = damaged(path, tmp_path, 20_001, replacement)
    before = target.read_bytes()
    assert gc.isenabled()
    with pytest.raises(SessionLogCorruptError) as caught:
        SessionLog.resume(target)
    assert caught.value.line_number == 20_001
    assert f"{target}:20001:" in str(caught.value)
    assert reason in str(caught.value)
    assert gc.isenabled()
    assert target.read_bytes() == before  # refused without touching the file


def test_a_torn_tail_of_a_large_log_is_recovered_and_numbering_continues(
    large_log: tuple[Path, SessionLog], tmp_path: Path
) -> None:
    path, written = large_log
    target = tmp_path / "torn.jsonl"
    target.write_bytes(path.read_bytes() + b'{"seq":')
    with SessionLog.resume(target) as log:
        assert log.recovered_torn_line is not None
        assert len(log) == len(written)
        event = log.append("myapp/bookmark", {"at": "end"})
        assert event.seq == len(written)
    original = path.read_bytes()
    data = target.read_bytes()
    assert data.startswith(original)
    appended = data[len(original) :]  # the torn bytes are gone: only the new event follows
    assert appended.startswith(b'{"seq":%d,' % len(written)) and appended.count(b"\n") == 1
    assert SessionLog.read(target).events[-1].data == {"at": "end"}
