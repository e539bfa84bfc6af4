"""The durable session log (``toolrt.loop``) and log replay (``toolrt.loop._replay``)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from helpers import text
from toolrt import ToolFailure, ToolRuntime, ToolSuccess, define_tool, user_message
from toolrt._content import content_text
from toolrt.loop import (
    INCOMPLETE_CALL_TEXT,
    MODEL_USER,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    InvalidEventError,
    NewEvent,
    SessionLog,
    SessionLogCorruptError,
    SessionLogError,
    approval_asked_event,
    approval_decided_event,
    code_dispatch_event,
    code_dispatch_start_event,
    context_added_event,
    derive_messages,
    model_assistant_event,
    model_user_event,
    tool_call_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)
from toolrt.loop._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage, UserMessage
from toolrt.loop._replay import ApprovalItem, MessageItem, ToolItem, TurnItem, render_call_card, replay
from toolrt.lowlevel import ToolError, ToolErrorInfo


def assistant(*calls: tuple[str, str, str], text_: str = "") -> NewEvent:
    message = AssistantMessage(text_, tuple(ToolCall(*call) for call in calls), None, "tool_calls")
    return model_assistant_event(message, Usage(10, 5))


def ok(call_id: str, name: str = "echo", value: str | None = None) -> NewEvent:
    result = ToolSuccess(value=value or call_id, content=text(value or f"done {call_id}"))
    return tool_result_event(call_id, name, result)


def every_event_type() -> list[NewEvent]:
    """One event of every known type (plus an unknown one), with non-ASCII text and nested data."""
    return [
        turn_start_event(1, agent="main"),
        model_user_event("héllo — 你好 🎉"),
        model_user_event(text("ctx"), id="u-2", source={"kind": "cli"}),
        model_assistant_event(
            AssistantMessage(
                "calling",
                (ToolCall("c1", "echo", '{"text": "a"}'), ToolCall("c2", "run_code", "{}")),
                "hmm",
                "tool_calls",
            ),
            Usage(12, None),
        ),
        tool_call_event("c1", "echo", '{"text": "a"}', {"text": "a"}, agent="main"),
        approval_asked_event("c1", "echo", reason="writes", arguments={"text": "a"}, agent="main"),
        approval_decided_event("c1", "echo", "allowed-once"),
        tool_result_event(
            "c1",
            "echo",
            ToolSuccess(value="a", content=text("a"), meta={"lines": [1, 2.5, None, True]}),
        ),
        context_added_event("c1", user_message("ctx-1", "lint rules", plugin="lint")),
        tool_call_event("c2", "run_code", "{}", {}, agent="main"),
        code_dispatch_start_event(
            root_call_id="c2",
            parent_call_id="c2",
            sub_call_id="c2:code:1",
            name="echo",
            arguments={"text": "x"},
        ),
        code_dispatch_event(
            root_call_id="c2",
            parent_call_id="c2",
            sub_call_id="c2:code:1",
            name="echo",
            arguments={"text": "x"},
            is_error=False,
            content=text("x"),
        ),
        tool_result_event(
            "c2",
            "run_code",
            ToolFailure(
                error=ToolError("code run failed", ToolErrorInfo("CodeRunFailedError", "CODE_RUN_FAILED")),
                content=text("Error: code run failed"),
            ),
        ),
        model_assistant_event(AssistantMessage("done", (), None, "stop")),
        turn_end_event("stop", turn=1),
        NewEvent("myapp/bookmark", {"label": "ünïcode", "nested": {"deep": [[{"x": 1}]]}}),
    ]


# --- round trip and format ------------------------------------------------------------------------


def test_every_event_type_round_trips_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    specs = every_event_type()
    with SessionLog.create(path) as log:
        appended = [log.append(*spec) for spec in specs]
    result = SessionLog.read(path)
    assert result.torn is None
    assert result.events == tuple(appended)
    assert [(event.seq, event.type) for event in result.events] == [
        (index, spec.type) for index, spec in enumerate(specs)
    ]
    for event, spec in zip(result.events, specs, strict=True):
        assert event.data == json.loads(json.dumps(spec.data))

    raw = path.read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b"" and len(lines) == len(specs) + 1  # one \n-terminated line per event
    first = json.loads(lines[1])
    assert list(first) == ["seq", "type", "time", "data"]
    assert "héllo — 你好 🎉".encode() in raw  # ensure_ascii=False
    assert b"\\u" not in raw


def test_in_memory_log_holds_the_same_events_as_a_file_log(tmp_path: Path) -> None:
    memory = SessionLog.in_memory(clock=lambda: 42.0)
    with SessionLog.create(tmp_path / "s.jsonl", clock=lambda: 42.0) as file_log:
        for spec in every_event_type():
            assert memory.append(*spec) == file_log.append(*spec)
    assert memory.events() == SessionLog.read(tmp_path / "s.jsonl").events
    assert memory.path is None and memory.recovered_torn_line is None


def test_event_data_is_a_frozen_snapshot_detached_from_the_caller() -> None:
    log = SessionLog.in_memory()
    data: dict[str, Any] = {"items": [1, 2]}
    event = log.append("myapp/x", data)
    data["items"].append(3)
    assert event.data == {"items": [1, 2]}
    with pytest.raises(TypeError):
        event.data["items"].append(4)


@pytest.mark.parametrize(
    ("data", "where"),
    [({"s": "a\ud800b"}, "data.s"), ({"x": [{"\udcff": 1}]}, "data.x[0]: object key")],
)
def test_a_lone_surrogate_is_refused_on_append_and_nothing_is_written(
    tmp_path: Path, data: dict[str, Any], where: str
) -> None:
    """Issue 12 item 6: text in a log is valid UTF-8, so an event no encoder can write is refused."""
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:
        log.append("myapp/x", {"é": "ü"})
        before = path.read_bytes()
        with pytest.raises(InvalidEventError, match="lone surrogate") as caught:
            log.append("myapp/x", data)
        assert where in str(caught.value)
        str(caught.value).encode("utf-8")  # the error itself is printable
        assert log.next_seq == 1
    assert path.read_bytes() == before
    before.decode("utf-8")


def test_an_escaped_lone_surrogate_in_the_file_is_a_corrupt_line_and_a_pair_reads_as_one_character(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    pair = b'{"seq":0,"type":"myapp/x","time":1.0,"data":{"s":"\\ud83d\\ude00"}}\n'
    lone = b'{"seq":1,"type":"myapp/x","time":1.0,"data":{"s":"\\ud800"}}\n'
    path.write_bytes(pair + lone + pair.replace(b'"seq":0', b'"seq":2'))
    with pytest.raises(SessionLogCorruptError, match="lone surrogate") as caught:
        SessionLog.read(path)
    assert caught.value.line_number == 2
    path.write_bytes(pair)
    assert SessionLog.read(path).events[0].data == {"s": "\U0001f600"}


# --- creating or resuming ---------------------------------------------------------------------------


def test_create_refuses_a_path_that_already_holds_a_log_and_names_the_fix(tmp_path: Path) -> None:
    """Issue 12 item 4: reusing a path used to mix the old conversation into the new run."""
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:
        log.append("myapp/x", {"old": True})
    before = path.read_bytes()
    with pytest.raises(SessionLogError) as caught:
        SessionLog.create(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: a session log already exists here")
    assert "SessionLog.resume(path)" in message and "another path" in message
    assert path.read_bytes() == before  # refused without touching it
    with pytest.raises(SessionLogError, match="already exists"):
        SessionLog.open(path, "create")


def test_create_takes_an_existing_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.touch()
    with SessionLog.create(path) as log:
        assert log.append("myapp/x", {}).seq == 0


def test_resume_refuses_a_missing_log_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "typo.jsonl"
    with pytest.raises(SessionLogError) as caught:
        SessionLog.resume(path)
    assert str(caught.value) == (
        f"{path}: no session log to resume (the file does not exist); "
        "start a new one with SessionLog.create(path)"
    )
    assert not path.exists()
    with pytest.raises(SessionLogError, match="no session log to resume"):
        SessionLog.open(path, "resume")


def test_resume_continues_the_conversation(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:
        log.append("myapp/x", {"i": 0})
    with SessionLog.resume(path) as again:
        assert [event.data for event in again.events()] == [{"i": 0}]
        assert again.append("myapp/x", {"i": 1}).seq == 1


def test_open_needs_an_explicit_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(TypeError, match="mode"):
        SessionLog.open(path)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="mode must be 'create' or 'resume'"):
        SessionLog.open(path, "append")  # type: ignore[arg-type]
    assert not path.exists()
    with SessionLog.open(path, "create") as log:
        log.append("myapp/x", {})
    with SessionLog.open(path, "resume") as log:
        assert len(log) == 1


def test_a_path_that_cannot_be_opened_is_a_session_log_error(tmp_path: Path) -> None:
    with pytest.raises(SessionLogError, match="cannot open the session log"):
        SessionLog.create(tmp_path)  # a directory


# --- durability -----------------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["flush", "fsync", "batch"])
def test_every_append_is_visible_to_a_second_handle_at_once(tmp_path: Path, durability: Any) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path, durability=durability, batch_size=1000) as log:
        for index in range(5):
            log.append("myapp/x", {"i": index})
            with open(path, "rb") as reader:
                lines = reader.read().splitlines()
            assert len(lines) == index + 1
            assert json.loads(lines[-1])["data"] == {"i": index}


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


@pytest.mark.parametrize(
    ("durability", "after_each", "on_close"),
    [
        ("flush", [0, 0, 0, 0, 0, 0, 0], 0),
        ("fsync", [1, 2, 3, 4, 5, 6, 7], 7),
        ("batch", [0, 0, 1, 1, 1, 2, 2], 3),
    ],
)
def test_durability_modes_fsync_when_they_promise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durability: Any, after_each: list[int], on_close: int
) -> None:
    log = SessionLog.create(tmp_path / "s.jsonl", durability=durability, batch_size=3)
    calls = count_fsyncs(monkeypatch)
    seen = []
    for index in range(7):
        log.append("myapp/x", {"i": index})
        seen.append(len(calls))
    log.close()
    assert seen == after_each
    assert len(calls) == on_close


def test_sync_forces_an_fsync_in_batch_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with SessionLog.create(tmp_path / "s.jsonl", durability="batch", batch_size=100) as log:
        calls = count_fsyncs(monkeypatch)
        log.append("myapp/x", {})
        assert calls == []
        log.sync()
        assert len(calls) == 1
    assert len(calls) == 1  # nothing left to sync on close


def test_open_rejects_unknown_durability_and_bad_batch_size(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="durability"):
        SessionLog.create(tmp_path / "a.jsonl", durability="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        SessionLog.create(tmp_path / "a.jsonl", durability="batch", batch_size=0)
    assert not (tmp_path / "a.jsonl").exists()


def test_a_closed_log_refuses_appends(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path / "s.jsonl")
    log.append("myapp/x", {})
    log.close()
    log.close()  # idempotent
    assert log.closed
    with pytest.raises(SessionLogError, match="closed"):
        log.append("myapp/x", {})
    memory = SessionLog.in_memory()
    memory.close()
    with pytest.raises(SessionLogError, match="closed"):
        memory.append("myapp/x", {})


def test_a_second_writer_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:
        log.append("myapp/x", {})
        with pytest.raises(SessionLogError, match="already open"):
            SessionLog.resume(path)
        log.append("myapp/x", {})
    with SessionLog.resume(path) as again:  # the lock is released on close
        assert again.append("myapp/x", {}).seq == 2


def test_a_failed_write_rolls_the_file_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog.create(path)
    log.append("myapp/x", {"i": 0})
    before = path.read_bytes()
    real_write = os.write

    def half_then_fail(fd: int, data: Any) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(OSError, match="No space"):
        log.append("myapp/x", {"i": 1, "pad": "x" * 100})
    monkeypatch.setattr(os, "write", real_write)
    assert path.read_bytes() == before
    assert log.append("myapp/x", {"i": 1}).seq == 1
    log.close()
    assert [event.data["i"] for event in SessionLog.read(path).events] == [0, 1]


def test_a_failed_fsync_makes_the_log_refuse_further_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog.create(path, durability="fsync")
    log.append("myapp/x", {"i": 0})

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(SessionLogError, match="fsync failed"):
        log.append("myapp/x", {"i": 1})
    assert [event.seq for event in log.events()] == [0, 1]  # written, just not known durable
    with pytest.raises(SessionLogError, match="reopen it"):
        log.append("myapp/x", {"i": 2})
    log.close()
    monkeypatch.undo()
    with SessionLog.resume(path) as reopened:
        assert reopened.append("myapp/x", {"i": 2}).seq == 2


# --- crash recovery -------------------------------------------------------------------------------


def write_three(path: Path, then: bytes = b"") -> bytes:
    """Log three events to ``path``, then append the raw bytes ``then``; return the three's bytes."""
    with SessionLog.create(path) as log:
        for index in range(3):
            log.append("myapp/x", {"i": index})
    good = path.read_bytes()
    if then:
        with open(path, "ab") as file:
            file.write(then)
    return good


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        (b'{"seq":3,"type":"myapp/x","ti', "missing trailing newline"),
        (b'{"seq":3,"type":"myapp/x","time":1.0,"data":{"i":3}}', "missing trailing newline"),
        (b'{"seq":3,"type":"myapp/x","ti\n', "invalid JSON"),
        (b"\x00\x00\x00\x00\n", "invalid JSON"),
    ],
)
def test_a_torn_last_line_is_reported_and_nothing_before_it_is_lost(
    tmp_path: Path, tail: bytes, reason: str
) -> None:
    path = tmp_path / "s.jsonl"
    good = write_three(path, then=tail)

    result = SessionLog.read(path)
    assert [event.data["i"] for event in result.events] == [0, 1, 2]
    assert result.torn is not None
    assert result.torn.offset == len(good)
    assert result.torn.line_number == 4
    assert result.torn.length == len(tail)
    assert result.torn.preview == tail.rstrip(b"\n")
    assert reason in result.torn.reason
    assert path.read_bytes() == good + tail  # reading never modifies


def test_opening_a_torn_log_repairs_it_and_numbering_continues(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = write_three(path, then=b'{"seq":3,"type":"myapp/x","data":{"i":')

    with SessionLog.resume(path) as log:
        torn = log.recovered_torn_line
        assert torn is not None and torn.offset == len(good)
        assert path.read_bytes() == good  # truncated before any append
        assert [event.seq for event in log.events()] == [0, 1, 2]
        assert log.append("myapp/x", {"i": 3}).seq == 3
        assert log.append("myapp/x", {"i": 4}).seq == 4

    result = SessionLog.read(path)
    assert result.torn is None
    assert [(event.seq, event.data["i"]) for event in result.events] == [(i, i) for i in range(5)]
    with SessionLog.resume(path) as again:
        assert again.recovered_torn_line is None


def test_a_long_torn_line_previews_only_its_start(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path, then=b'{"seq":3,"data":"' + b"y" * 5000)
    torn = SessionLog.read(path).torn
    assert torn is not None
    assert torn.length == 5017
    assert torn.preview == (b'{"seq":3,"data":"' + b"y" * 5000)[:200]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"{not json}\n", "invalid JSON"),
        (b'{"seq":1,"type":"myapp/x","time":1.0,"data":{"n":NaN}}\n', "NaN is not JSON"),
        (b"\xff\xfe\n", "invalid JSON"),
        (b"\n", "invalid JSON"),
    ],
)
def test_invalid_json_mid_file_is_a_hard_error_naming_the_line(
    tmp_path: Path, bad: bytes, reason: str
) -> None:
    path = tmp_path / "s.jsonl"
    good = write_three(path)
    first, rest = good.split(b"\n", 1)
    damaged = first + b"\n" + bad + rest
    path.write_bytes(damaged)

    with pytest.raises(SessionLogCorruptError) as caught:
        SessionLog.read(path)
    assert caught.value.line_number == 2
    assert f"{path}:2:" in str(caught.value)
    assert reason in str(caught.value)
    with pytest.raises(SessionLogCorruptError):
        SessionLog.resume(path)
    assert path.read_bytes() == damaged  # open refused without touching the file


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"seq":7,"type":"myapp/x","time":1.0,"data":{}}\n', '"seq" is 7, expected 3'),
        (b'{"seq":3,"type":"","time":1.0,"data":{}}\n', '"type" must be'),
        (b'{"seq":3,"type":"myapp/x","time":"now","data":{}}\n', '"time" must be'),
        (b'{"seq":3,"type":"myapp/x","time":1.0,"data":[]}\n', '"data" must be'),
        (b'{"seq":3,"type":"myapp/x","time":1.0,"data":{"x":-0.0}}\n', "-0.0"),
        (b"[1,2]\n", "must be a JSON object"),
    ],
)
def test_a_valid_json_line_that_is_not_an_event_is_corrupt_even_at_the_end(
    tmp_path: Path, line: bytes, reason: str
) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path, then=line)
    with pytest.raises(SessionLogCorruptError, match=r"s\.jsonl:4:") as caught:
        SessionLog.read(path)
    assert reason in caught.value.reason


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"x": float("nan")}, "data.x: NaN"),
        ({"x": [1, float("inf")]}, "data.x[1]: NaN and infinities"),
        ({"x": -0.0}, "-0.0"),
        ({"x": 2**53 + 1}, "not exactly representable"),
        ({"x": {1, 2}}, "set is not a JSON type"),
        ({"x": {1: "a"}}, "not a string"),
        ({"x": b"bytes"}, "bytes is not a JSON type"),
    ],
)
def test_non_lossless_data_is_rejected_and_the_file_is_unchanged(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:
        log.append("myapp/x", {"i": 0})
        before = path.read_bytes()
        with pytest.raises(InvalidEventError, match="myapp/x event rejected") as caught:
            log.append("myapp/x", data)
        assert message in str(caught.value)
        assert path.read_bytes() == before
        assert len(log) == 1
        assert log.append("myapp/x", {"i": 1}).seq == 1  # the rejected event consumed no number


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (NewEvent(TOOL_RESULT, {"name": "echo", "content": [], "is_error": False, "error": None}), "call_id"),
        (NewEvent(TOOL_RESULT, {**ok("c1").data, "is_error": True}), "exactly when"),
        (NewEvent(TOOL_RESULT, {**ok("c1").data, "content": ["plain"]}), "content blocks"),
        (NewEvent(TOOL_CALL, {"call_id": "c1", "name": "echo", "arguments": {}}), "arguments must be"),
        (NewEvent(MODEL_USER, {"content": "hi"}), "content must be"),
        (approval_decided_event("c1", "echo", "maybe"), "outcome must be one of"),  # type: ignore[arg-type]
        (turn_end_event("tired"), "reason must be one of"),  # type: ignore[arg-type]
        (NewEvent("", {}), "non-empty"),
    ],
)
def test_known_event_types_must_have_their_shape(spec: NewEvent, message: str) -> None:
    log = SessionLog.in_memory()
    with pytest.raises(InvalidEventError, match=message):
        log.append(*spec)
    assert log.events() == ()


@pytest.mark.parametrize("raw", ['{"x": NaN}', '{"x": -0.0}', '{"x": 1e999}', "[9007199254740993]"])
def test_a_tool_call_whose_parsed_arguments_are_not_lossless_is_still_logged(raw: str) -> None:
    log = SessionLog.in_memory()
    event = log.append(*tool_call_event("c1", "echo", raw, json.loads(raw)))
    assert event.data["arguments"] == raw
    assert event.data["parsed_arguments"] is None


def test_data_must_be_an_object() -> None:
    with pytest.raises(InvalidEventError, match="must be a JSON object"):
        SessionLog.in_memory().append("myapp/x", [1, 2])  # type: ignore[arg-type]


def test_session_log_cannot_be_constructed_directly() -> None:
    with pytest.raises(TypeError, match=r"SessionLog\.create\(path\), SessionLog\.resume\(path\)"):
        SessionLog(_token=None)


# --- derive_messages ------------------------------------------------------------------------------


def label(message: Message) -> tuple[str, str | None]:
    if isinstance(message, ToolResultMessage):
        return ("tool", message.call_id)
    if isinstance(message, UserMessage):
        return ("user", message.id or content_text(message.content))
    if isinstance(message, AssistantMessage):
        return ("assistant", message.text)
    return (message.role, None)


def test_results_derive_in_model_order_and_contexts_follow_the_batch() -> None:
    log = SessionLog.in_memory()
    log.append(*model_user_event("go"))
    log.append(*assistant(("a", "echo", '{"text":"a"}'), ("b", "echo", "{}"), ("c", "slow", "{}")))
    for call_id in ("a", "b", "c"):
        log.append(*tool_call_event(call_id, "echo", "{}", {}))
    # c finishes first, then a, then b; contexts are logged right after their results
    log.append(*ok("c", "slow"))
    log.append(*context_added_event("c", user_message("ctx-c1", "from c", plugin="p")))
    log.append(*context_added_event("c", user_message("ctx-c2", "from c again", plugin="p")))
    log.append(*ok("a"))
    log.append(*context_added_event("a", user_message("ctx-a", "from a", plugin="p")))
    log.append(*ok("b"))
    log.append(*model_assistant_event(AssistantMessage("all done", (), None, "stop")))

    messages = log.messages()
    assert [label(message) for message in messages] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "a"),
        ("tool", "b"),
        ("tool", "c"),
        ("user", "ctx-a"),
        ("user", "ctx-c1"),
        ("user", "ctx-c2"),
        ("assistant", "all done"),
    ]
    assert messages[0] == UserMessage(text("go"))
    assert messages[1] == AssistantMessage(
        "",
        (ToolCall("a", "echo", '{"text":"a"}'), ToolCall("b", "echo", "{}"), ToolCall("c", "slow", "{}")),
        None,
        "tool_calls",
    )
    assert messages[4] == ToolResultMessage("c", "slow", text("done c"), False)
    assert messages[5] == UserMessage(text("from a"), "ctx-a", {"kind": "plugin", "plugin": "p"})


def test_a_call_without_a_logged_result_gets_a_synthetic_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:
        log.append(*model_user_event("go"))
        log.append(*assistant(("a", "echo", "{}"), ("b", "echo", "{}"), ("c", "echo", "{}")))
        log.append(*tool_call_event("a", "echo", "{}", {}))
        log.append(*tool_call_event("b", "echo", "{}", {}))
        log.append(*ok("b"))
        # crash: a never finished, c never started
    messages = derive_messages(SessionLog.read(path).events)
    assert messages[2:] == [
        ToolResultMessage("a", "echo", text(INCOMPLETE_CALL_TEXT), True),
        ToolResultMessage("b", "echo", text("done b"), False),
        ToolResultMessage("c", "echo", text(INCOMPLETE_CALL_TEXT), True),
    ]
    assert INCOMPLETE_CALL_TEXT == (
        "Error: tool call did not complete (the session ended before its result was recorded)"
    )


def test_a_synthetic_result_also_fills_a_batch_followed_by_a_later_model_call() -> None:
    log = SessionLog.in_memory()
    log.append(*assistant(("a", "echo", "{}")))
    log.append(*model_assistant_event(AssistantMessage("resumed", (), None, "stop")))
    messages = log.messages()
    assert [m.role for m in messages] == ["assistant", "tool", "assistant"]
    assert messages[1] == ToolResultMessage("a", "echo", text(INCOMPLETE_CALL_TEXT), True)


def test_a_user_message_logged_mid_batch_follows_the_batch() -> None:
    log = SessionLog.in_memory()
    log.append(*assistant(("a", "echo", "{}")))
    log.append(*model_user_event("steer: hurry up"))
    log.append(*ok("a"))
    assert [m.role for m in log.messages()] == ["assistant", "tool", "user"]


def test_code_dispatch_approval_turn_and_unknown_events_derive_nothing() -> None:
    core = [
        model_user_event("go"),
        assistant(("c1", "run_code", "{}")),
        ok("c1", "run_code"),
    ]
    noise = [
        turn_start_event(1),
        tool_call_event("c1", "run_code", "{}", {}),
        approval_asked_event("c1", "run_code", reason=None, arguments={}),
        approval_decided_event("c1", "run_code", "allowed-once"),
        code_dispatch_start_event(
            root_call_id="c1", parent_call_id="c1", sub_call_id="c1:code:1", name="echo", arguments={}
        ),
        code_dispatch_event(
            root_call_id="c1",
            parent_call_id="c1",
            sub_call_id="c1:code:1",
            name="echo",
            arguments={},
            is_error=False,
            content=text("sub"),
        ),
        NewEvent("myapp/bookmark", {"call_id": "zzz"}),
        turn_end_event("concluded", turn=1),
    ]
    quiet = SessionLog.in_memory()
    for spec in core:
        quiet.append(*spec)
    noisy = SessionLog.in_memory()
    noisy.append(*noise[0])
    noisy.append(*core[0])
    noisy.append(*core[1])
    for spec in noise[1:-1]:
        noisy.append(*spec)
    noisy.append(*core[2])
    noisy.append(*noise[-1])
    assert len(noisy.messages()) == 3
    assert noisy.messages() == quiet.messages()


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([ok("ghost")], "not a tool call of the preceding assistant message"),
        ([assistant(("a", "echo", "{}")), ok("a"), ok("a")], "second result"),
        ([assistant(("a", "echo", "{}"), ("a", "echo", "{}"))], "repeated tool call id"),
        (
            [assistant(("a", "echo", "{}")), context_added_event("b", user_message("x", "y"))],
            "call 'b' is not a tool call",
        ),
    ],
)
def test_inconsistent_logs_are_reported_not_papered_over(specs: list[NewEvent], message: str) -> None:
    log = SessionLog.in_memory()
    for spec in specs:
        log.append(*spec)
    with pytest.raises(InvalidEventError, match=message):
        log.messages()


def test_derive_checks_event_shapes_it_did_not_write() -> None:
    bogus = Event(0, TOOL_RESULT, 1.0, {"call_id": "a"})
    with pytest.raises(InvalidEventError, match=r"event 0 \(tool/result\): data.name is missing"):
        derive_messages([bogus])


# --- replay ---------------------------------------------------------------------------------------


def shell_tool(**overrides: Any) -> Any:
    options: dict[str, Any] = {
        "name": "shell",
        "description": "run a command",
        "parameters": {"command": {"type": "string", "required": True}},
        "output": {"schema": {"type": "string"}, "presentation_meta": lambda args, value: {"exit": 0}},
        "execute": lambda args, ctx: "ok",
        "present_call": lambda args: {"card": "terminal", "title": args["command"]},
        "present_result": lambda args, result: {
            "card": "terminal",
            "title": args["command"],
            "output": result["content"][0]["text"],
            "exitCode": result["meta"]["exit"],
        },
    }
    options.update(overrides)
    return define_tool(**options)


def shell_session() -> SessionLog:
    log = SessionLog.in_memory()
    log.append(*turn_start_event(1, agent="main"))
    log.append(*model_user_event("list"))
    log.append(*assistant(("s1", "shell", '{"command": "ls"}'), ("s2", "shell", '{"command": "pwd"}')))
    log.append(*tool_call_event("s1", "shell", '{"command": "ls"}', {"command": "ls"}, agent="main"))
    log.append(*tool_call_event("s2", "shell", '{"command": "pwd"}', {"command": "pwd"}, agent="main"))
    log.append(*tool_result_event("s2", "shell", ToolSuccess(value="/", content=text("/"), meta={"exit": 0})))
    log.append(
        *tool_result_event("s1", "shell", ToolSuccess(value="a", content=text("a b"), meta={"exit": 0}))
    )
    log.append(*turn_end_event("stop", turn=1))
    return log


def test_replay_renders_cards_with_the_tools_presenters() -> None:
    runtime = ToolRuntime()
    runtime.register(shell_tool())
    items = replay(shell_session().events(), runtime)
    assert [type(item).__name__ for item in items] == [
        "TurnItem",
        "MessageItem",
        "MessageItem",
        "ToolItem",
        "ToolItem",
        "TurnItem",
    ]
    first, second = items[3], items[4]
    assert isinstance(first, ToolItem) and isinstance(second, ToolItem)
    assert (first.call_id, second.call_id) == ("s1", "s2")  # placed where the calls were logged
    assert first.call_card == {"card": "terminal", "title": "ls"}
    assert first.result_card == {"card": "terminal", "title": "ls", "output": "a b", "exitCode": 0}
    assert second.result_card == {"card": "terminal", "title": "pwd", "output": "/", "exitCode": 0}
    assert first.is_error is False
    assert isinstance(items[5], TurnItem) and items[5].reason == "stop"


def test_replay_falls_back_to_generic_cards_for_an_unknown_tool() -> None:
    for runtime in (ToolRuntime(), None):
        items = replay(shell_session().events(), runtime)
        tool = items[3]
        assert isinstance(tool, ToolItem)
        assert tool.call_card == {"card": "generic", "title": "shell", "rawInput": {"command": "ls"}}
        assert tool.result_card == {"card": "generic", "title": "shell", "content": text("a b")}


def raising(*args: Any) -> Any:
    raise RuntimeError("presenter bug")


@pytest.mark.parametrize(
    "presenters",
    [
        {"present_call": raising, "present_result": raising},
        {"present_call": lambda args: None, "present_result": lambda args, result: None},
        {"present_call": lambda args: "not a card", "present_result": lambda args, result: {"no": "card"}},
        {
            "present_call": lambda args: {"card": "terminal", "title": float("nan")},
            "present_result": lambda args, result: {"card": "terminal", "output": object()},
        },
        {"present_call": None, "present_result": None},
    ],
    ids=["raises", "returns-none", "not-a-card", "not-json", "no-presenter"],
)
def test_replay_never_crashes_on_a_bad_presenter(presenters: dict[str, Any]) -> None:
    runtime = ToolRuntime()
    runtime.register(shell_tool(**presenters))
    items = replay(shell_session().events(), runtime)
    tool = items[3]
    assert isinstance(tool, ToolItem)
    assert tool.call_card == {"card": "generic", "title": "shell", "rawInput": {"command": "ls"}}
    assert tool.result_card == {"card": "generic", "title": "shell", "content": text("a b")}


def test_replayed_arguments_that_no_longer_validate_fall_back_softly() -> None:
    runtime = ToolRuntime()
    runtime.register(shell_tool())
    log = SessionLog.in_memory()
    log.append(*tool_call_event("s1", "shell", '{"cmd": "ls"}', {"cmd": "ls"}))  # an old schema
    log.append(*tool_call_event("s2", "shell", "{not json", None))
    first, second = replay(log.events(), runtime)
    assert isinstance(first, ToolItem) and first.call_card["card"] == "generic"
    assert isinstance(second, ToolItem)
    assert second.call_card == {"card": "generic", "title": "shell", "rawInput": "{not json"}
    assert second.result_card is None and second.is_error is None


def test_replay_uses_the_logged_agent_to_find_scoped_tools() -> None:
    runtime = ToolRuntime()
    scope = runtime.scope("main")
    scope.register(shell_tool())
    log = SessionLog.in_memory()
    main = log.append(*tool_call_event("s1", "shell", "{}", {"command": "ls"}, agent="main"))
    other = log.append(*tool_call_event("s2", "shell", "{}", {"command": "ls"}, agent="other"))
    unhashable = log.append(*tool_call_event("s3", "shell", "{}", {"command": "ls"}, agent={"id": "x"}))
    assert render_call_card(main, runtime) == {"card": "terminal", "title": "ls"}
    assert render_call_card(other, runtime)["card"] == "generic"
    assert render_call_card(unhashable, runtime)["card"] == "generic"


def test_replay_shows_sub_calls_approvals_and_contexts() -> None:
    runtime = ToolRuntime()
    scope = runtime.scope("main")
    scope.register(shell_tool())
    log = SessionLog.in_memory()
    log.append(*assistant(("r1", "run_code", "{}")))
    log.append(*tool_call_event("r1", "run_code", "{}", {}, agent="main"))
    log.append(*approval_asked_event("r1", "run_code", reason="runs code", arguments={}))
    log.append(*approval_decided_event("r1", "run_code", "allowed-once"))
    ids = {"root_call_id": "r1", "parent_call_id": "r1", "sub_call_id": "r1:code:1", "name": "shell"}
    log.append(*code_dispatch_start_event(**ids, arguments={"command": "ls"}))
    log.append(*code_dispatch_event(**ids, arguments={"command": "ls"}, is_error=False, content=text("a")))
    log.append(*ok("r1", "run_code"))
    log.append(*context_added_event("r1", user_message("ctx-1", "note", plugin="p")))
    items = replay(log.events(), runtime)
    assert [type(item).__name__ for item in items] == [
        "MessageItem",
        "ToolItem",
        "ApprovalItem",
        "ToolItem",
        "MessageItem",
    ]
    approval = items[2]
    assert isinstance(approval, ApprovalItem)
    assert (approval.reason, approval.outcome) == ("runs code", "allowed-once")
    sub = items[3]
    assert isinstance(sub, ToolItem) and sub.kind == "sub-call" and sub.parent_call_id == "r1"
    # the sub-call has no agent of its own: the parent's agent finds the scoped presenter
    assert sub.call_card == {"card": "terminal", "title": "ls"}
    assert sub.result_card is not None and sub.result_card["card"] == "generic"  # no meta: presenter raised
    context = items[4]
    assert isinstance(context, MessageItem) and context.kind == "context" and context.call_id == "r1"
    assert isinstance(items[1], ToolItem) and items[1].result_card is not None


def test_render_call_card_rejects_the_wrong_event_type() -> None:
    event = SessionLog.in_memory().append(*model_user_event("hi"))
    with pytest.raises(ValueError, match="render_call_card takes"):
        render_call_card(event)


# --- concurrency and volume -----------------------------------------------------------------------


def test_concurrent_appends_from_threads_are_serialized(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:

        def worker(name: int) -> None:
            for index in range(300):
                log.append("myapp/x", {"worker": name, "i": index, "pad": "z" * (name * 50)})

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    result = SessionLog.read(path)
    assert result.torn is None
    assert [event.seq for event in result.events] == list(range(2400))
    for worker_id in range(8):
        mine = [event.data["i"] for event in result.events if event.data["worker"] == worker_id]
        assert mine == list(range(300))


async def test_concurrent_appends_from_asyncio_tasks_are_serialized(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path) as log:

        async def task(name: int) -> list[int]:
            seqs = []
            for index in range(50):
                seqs.append(log.append("myapp/x", {"task": name, "i": index}).seq)
                await asyncio.sleep(0)
            return seqs

        results = await asyncio.gather(*(task(n) for n in range(10)))
    assert sorted(seq for seqs in results for seq in seqs) == list(range(500))
    assert [event.seq for event in SessionLog.read(path).events] == list(range(500))


def test_ten_thousand_appends_read_back_intact(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionLog.create(path, durability="batch") as log:
        for index in range(10_000):
            log.append(*tool_call_event(f"c{index}", "echo", '{"text": "é"}', {"text": "é", "n": index}))
    assert path.read_bytes().count(b"\n") == 10_000
    result = SessionLog.read(path)
    assert result.torn is None
    assert len(result.events) == 10_000
    assert all(event.seq == index for index, event in enumerate(result.events))
    assert result.events[9_999].data["parsed_arguments"] == {"text": "é", "n": 9_999}
    with SessionLog.resume(path) as reopened:
        assert reopened.next_seq == 10_000
