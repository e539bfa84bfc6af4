"""The sandbox channel: framing, host-side validation of hostile child frames, and the child's own
lossless encoder (which must agree with the host's ``snapshot_json``)."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from toolrt._json import is_lossless_json, snapshot_json
from toolrt.sandbox._child import bootstrap_wire
from toolrt.sandbox._host.protocol import (
    MAX_JSON_DEPTH,
    BootFailed,
    Call,
    Done,
    FrameDecoder,
    Log,
    ProtocolViolation,
    Ready,
    encode_frame,
    lone_surrogate_in,
    parse_child_frame,
    value_depth_exceeds,
    value_wire_bytes,
)


def frame(payload: Any) -> bytes:
    body = json.dumps(payload).encode()
    return struct.pack(">I", len(body)) + body


def parse(payload: Any) -> Any:
    return parse_child_frame(json.dumps(payload).encode())


def violation(body: bytes | Any) -> str:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(ProtocolViolation) as info:
        parse_child_frame(raw)
    return info.value.reason


READY = {
    "t": "ready",
    "report": {"layers": ["rlimits"], "landlockAbi": 7, "enforcement": "full", "notes": []},
}


# --- framing ---------------------------------------------------------------------------------------


def test_encode_frame_is_length_prefixed_compact_ascii_json() -> None:
    data = encode_frame({"t": "reply", "id": 1, "ok": True, "value": "é"})
    (length,) = struct.unpack(">I", data[:4])
    assert length == len(data) - 4
    assert data[4:] == b'{"t":"reply","id":1,"ok":true,"value":"\\u00e9"}'


def test_encode_frame_writes_snapshots_as_plain_json() -> None:
    # Replies carry the pipeline's deep-immutable snapshots; they encode like the plain values.
    value = snapshot_json({"a": [1, {"b": 2.5, "c": None}], "s": "x", "t": True})
    data = encode_frame({"t": "reply", "id": 2, "ok": True, "value": value})
    assert data[4:] == b'{"t":"reply","id":2,"ok":true,"value":{"a":[1,{"b":2.5,"c":null}],"s":"x","t":true}}'


def test_encode_frame_refuses_nan() -> None:
    with pytest.raises(ValueError):
        encode_frame({"value": float("nan")})


def test_decoder_splits_and_joins_frames_across_chunks() -> None:
    decoder = FrameDecoder(1024)
    data = frame({"t": "log", "text": "a"}) + frame({"t": "log", "text": "b"})
    assert decoder.feed(data[:3]) == []
    assert decoder.feed(data[3:10]) == []
    bodies = decoder.feed(data[10:])
    assert [json.loads(body)["text"] for body in bodies] == ["a", "b"]
    assert decoder.pending_bytes == 0


def test_decoder_refuses_an_oversized_frame_from_its_header_alone() -> None:
    decoder = FrameDecoder(100)
    with pytest.raises(ProtocolViolation, match="frame of 1073741824 bytes exceeds the 100-byte frame limit"):
        decoder.feed(struct.pack(">I", 1 << 30))


# --- frame validation -------------------------------------------------------------------------------


def test_valid_frames_parse() -> None:
    ready = parse(READY)
    assert ready == Ready(("rlimits",), 7, "full", ())
    assert parse({"t": "log", "text": "hé"}) == Log("hé", 3)
    call = parse({"t": "call", "id": 1, "ns": "tools", "name": "read", "args": {"a": [1]}})
    assert isinstance(call, Call) and call.args == {"a": [1]}
    assert parse({"t": "done", "ok": True}) == Done(ok=True)
    assert parse({"t": "done", "ok": True, "value": None}) == Done(ok=True, has_value=True, value=None)
    failed = parse({"t": "done", "ok": False, "kind": "exception", "message": "boom"})
    assert failed == Done(ok=False, kind="exception", message="boom")
    assert parse({"t": "boot-failed", "message": "no landlock"}) == BootFailed("no landlock")


def test_log_size_counts_utf8_bytes() -> None:
    assert parse_child_frame(b'{"t":"log","text":"\\u00e9\\ud83d\\ude00"}') == Log("é\U0001f600", 6)


@pytest.mark.parametrize(
    "body",
    [
        b'{"t":"log","text":"\\ud800"}',
        b'{"t":"log","text":"ok\\udcff"}',
        b'{"t":"call","id":1,"ns":"tools","name":"echo","args":{"k":"\\uD800"}}',
        b'{"t":"call","id":1,"ns":"tools","name":"echo","args":{"\\udfff":1}}',
        b'{"t":"call","id":1,"ns":"tools","name":"ec\\ud800ho","args":{}}',
        b'{"t":"boot-failed","message":"\\ud800"}',
    ],
)
def test_a_frame_with_a_lone_surrogate_is_a_violation(body: bytes) -> None:
    """Text the model or the CLI could not encode is refused at the frame (issue 12, item 6)."""
    with pytest.raises(ProtocolViolation, match="lone surrogate in a string"):
        parse_child_frame(body)


def test_a_failure_message_with_a_lone_surrogate_is_made_encodable() -> None:
    frame = parse_child_frame(b'{"t":"done","ok":false,"kind":"exception","message":"bad \\ud800"}')
    assert frame == Done(ok=False, kind="exception", message="bad \ufffd\ufffd\ufffd")
    frame.message.encode("utf-8")


def test_lone_surrogate_in_walks_keys_and_values() -> None:
    assert not lone_surrogate_in({"a": ["é", "\U0001f600", 1, None]})
    assert lone_surrogate_in({"a": [1, {"b": "x\udc80"}]})
    assert lone_surrogate_in({"\ud800": 1})


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "malformed frame"),
        (b"\xff\xfe", "malformed frame"),
        (b'{"t":"done","ok":true,"value":NaN}', "malformed frame"),
        (b'{"t":"done","ok":true,"value":Infinity}', "malformed frame"),
        (b'{"t":"log","text":"x"} {"t":"log","text":"y"}', "malformed frame (Extra data"),
        (b'{"t":"log","text":"x"}\n', "malformed frame (Extra data"),
        (b"", "malformed frame"),
        (b"[1, 2]", "not an object"),
        (b'{"ok": true}', 'no string "t"'),
        (b'{"t": "reply", "id": 1}', "unknown frame kind 'reply'"),
        (b'{"t": "log"}', "log frame lacks text"),
        (b'{"t": "log", "text": "x", "extra": 1}', "unknown field(s) 'extra'"),
        (b'{"t": "log", "text": 1}', "log text must be a string"),
        (b'{"t": "call", "id": 0, "ns": "tools", "name": "x", "args": {}}', "positive integer"),
        (b'{"t": "call", "id": true, "ns": "tools", "name": "x", "args": {}}', "positive integer"),
        (b'{"t": "call", "id": 1.5, "ns": "tools", "name": "x", "args": {}}', "positive integer"),
        (b'{"t": "call", "id": 1, "ns": 1, "name": "x", "args": {}}', "must be strings"),
        (b'{"t": "call", "id": 1, "ns": "tools", "name": "x", "args": 9007199254740993}', "not lossless"),
        (b'{"t": "call", "id": 1, "ns": "tools", "name": "x", "args": -0.0}', "not lossless"),
        (b'{"t": "done", "ok": "yes"}', "ok must be a boolean"),
        (b'{"t": "done", "ok": true, "kind": "exception"}', "carries no kind"),
        (b'{"t": "done", "ok": false, "value": 1, "kind": "exception", "message": ""}', "carries no value"),
        (b'{"t": "done", "ok": false, "kind": "timeout", "message": ""}', "not one a child may report"),
        (b'{"t": "done", "ok": false, "kind": "exception", "message": 1}', "message must be a string"),
        (b'{"t": "ready", "report": {}}', "exactly layers"),
        (b'{"t": "boot-failed", "message": null}', "must be a string"),
    ],
)
def test_hostile_frames_are_violations(body: bytes, reason: str) -> None:
    assert reason in violation(body)


def test_ready_report_fields_are_checked() -> None:
    report = dict(READY["report"])  # type: ignore[call-overload]
    assert "landlockAbi" in violation({"t": "ready", "report": {**report, "landlockAbi": "7"}})
    assert "enforcement" in violation({"t": "ready", "report": {**report, "enforcement": "total"}})
    assert "layers" in violation({"t": "ready", "report": {**report, "layers": [1]}})
    assert "layers" in violation({"t": "ready", "report": {**report, "layers": ["x"] * 65}})


def test_brackets_inside_strings_are_not_nesting() -> None:
    # The depth walk runs only for bodies with many brackets; those inside strings count toward
    # running it, never toward the depth.
    brackets_in_strings = b'{"t":"log","text":"' + b"[{" * 1000 + b'"}'
    assert parse_child_frame(brackets_in_strings) == Log("[{" * 1000, 2000)


def test_deeply_nested_frames_are_violations_not_crashes() -> None:
    deep = b'{"t":"done","ok":true,"value":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert "nests deeper" in violation(deep)
    just_over = (
        b'{"t":"done","ok":true,"value":' + b"[" * (MAX_JSON_DEPTH + 5) + b"]" * (MAX_JSON_DEPTH + 5) + b"}"
    )
    assert "nests deeper" in violation(just_over)
    fine = b'{"t":"done","ok":true,"value":' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}"
    assert isinstance(parse_child_frame(fine), Done)


def test_done_values_are_passed_raw_for_the_host_to_judge() -> None:
    # Losslessness of a completion is a *result* (invalid-output), not a violation.
    done = parse_child_frame(b'{"t":"done","ok":true,"value":9007199254740993}')
    assert isinstance(done, Done) and done.value == 2**53 + 1


def test_long_messages_are_clipped() -> None:
    done = parse({"t": "done", "ok": False, "kind": "exception", "message": "x" * 200_000})
    assert isinstance(done, Done) and len(done.message) < 70_000


# --- value helpers --------------------------------------------------------------------------------------


def test_value_depth_exceeds() -> None:
    value: Any = 1
    for _ in range(10):
        value = [value]
    assert not value_depth_exceeds(value, 10)
    assert value_depth_exceeds(value, 9)
    assert not value_depth_exceeds("scalar", 0)
    assert value_depth_exceeds({"a": {"b": []}}, 2)


def test_value_wire_bytes_matches_the_childs_encoding() -> None:
    for value in [1, "é", {"a": [1, 2.5, None, True]}, "\U0001f600", [], {}]:
        assert value_wire_bytes(value) == len(bootstrap_wire.dumps(value))


# --- the child's encoder agrees with the host's lossless rules --------------------------------------


class Text(str):
    pass


LOSSLESS: list[Any] = [
    None,
    True,
    0,
    -(2**53) + 1,
    2**53 - 1,
    2**60,
    1.5,
    -2.25,
    1e300,
    "",
    "é\u2028\U0001f600",
    Text("sub"),
    [],
    {},
    (1, 2),
    {"a": [1, {"b": None}]},
    [[1], [1]],
]
LOSSY: list[Any] = [
    2**53 + 1,
    float("nan"),
    float("inf"),
    -0.0,
    {1: "int key"},
    {1, 2},
    b"bytes",
    object(),
]


@pytest.mark.parametrize("value", LOSSLESS, ids=repr)
def test_child_encoder_accepts_lossless_values(value: Any) -> None:
    assert is_lossless_json(value)
    text = bootstrap_wire.dumps(value)
    assert json.loads(text) == json.loads(json.dumps(value))
    assert text.isascii()


@pytest.mark.parametrize("value", LOSSY, ids=repr)
def test_child_encoder_rejects_lossy_values(value: Any) -> None:
    assert not is_lossless_json(value)
    with pytest.raises(bootstrap_wire.NotLossless):
        bootstrap_wire.dumps(value)


@pytest.mark.parametrize("value", ["\ud800", "ok\udcff", ["\udfff"], {"\ud800": 1}, {"k": Text("\ud800")}])
def test_child_encoder_refuses_lone_surrogates(value: Any) -> None:
    with pytest.raises(bootstrap_wire.NotLossless, match="lone surrogate in a string"):
        bootstrap_wire.dumps(value)


def test_child_encoder_rejects_cycles_and_excess_depth_without_recursion() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(bootstrap_wire.NotLossless, match="circular"):
        bootstrap_wire.dumps(cycle)
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(bootstrap_wire.NotLossless, match="deeper"):
        bootstrap_wire.dumps(deep)
    ok: Any = []
    for _ in range(MAX_JSON_DEPTH - 1):
        ok = [ok]
    assert bootstrap_wire.dumps(ok) == "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH


def test_child_decoder_reads_host_frames() -> None:
    payload = {"t": "reply", "id": 3, "ok": True, "value": {"s": "é\ud800", "n": [1, 2.5, None]}}
    body = encode_frame(payload)[4:].decode()
    assert bootstrap_wire.loads(body) == payload
    with pytest.raises(ValueError):
        bootstrap_wire.loads("NaN")
    with pytest.raises(ValueError):
        bootstrap_wire.loads('{"a": 1} trailing')


def test_protocol_depth_constant_matches_the_child() -> None:
    assert bootstrap_wire.MAX_JSON_DEPTH == MAX_JSON_DEPTH
