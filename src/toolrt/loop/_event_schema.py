"""What the ``data`` of each known event type must hold, checked in one place.

:meth:`SessionLog.append <toolrt.loop._session_log.SessionLog.append>` refuses an event of a known type
whose data does not fit, and :func:`~toolrt.loop._derive.derive_messages` applies the same check to
what it reads, so a log edited by hand or written by another tool cannot derive a conversation the
writer would have refused.

Known event types and their ``data`` (``?`` marks a value that may be ``null``):

``model/user``
    ``{content: [block], id: str?, source: json?}`` — a user message.
``model/assistant``
    ``{text: str, reasoning: str?, tool_calls: [{id, name, arguments: str}], stop_reason: str?,
    usage: {input_tokens: int?, output_tokens: int?}?}`` — ``arguments`` is the model's raw text.
``tool/call``
    ``{call_id, name, arguments: str, parsed_arguments: json?, agent: json?}`` — ``arguments`` is the
    raw text; ``parsed_arguments`` is what it parsed to, ``null`` when it did not parse (to
    lossless JSON).
``tool/result``
    ``{call_id, name, content: [block], is_error: bool, error: {message, info: {name, code}?}?,
    meta: json?}`` — ``error`` is set exactly when ``is_error``; the canonical value is never stored.
``context/added``
    ``{call_id, id: str, content: [block], source: json?}`` — an additional context appended after
    the result of ``call_id``.
``approval/asked`` / ``approval/decided``
    ``{call_id, tool_name, reason: str?, arguments: json, agent: json?}`` /
    ``{call_id, tool_name, outcome: "allowed-once" | "rejected" | "cancelled" | "unavailable"}``.
``tool/code-dispatch-start`` / ``tool/code-dispatch``
    ``{root_call_id, parent_call_id, sub_call_id, name, arguments: json, agent: json?}``, the settle
    event adding ``is_error: bool, content: [block]`` — upstream's B9 events with snake_case keys.
``turn/start`` / ``turn/end``
    ``{turn: int?, agent: json?}`` / ``{turn: int?, reason: "stop" | "step-budget" | "concluded" |
    "aborted" | "error", error: str?}``.

Extra keys in ``data`` are allowed and preserved (forward compatibility).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias, get_args

from toolrt._approval_request import ApprovalOutcome
from toolrt.loop import _event_records as event_records

__all__ = ["TurnEndReason", "check_event_data"]

TurnEndReason: TypeAlias = Literal["stop", "step-budget", "concluded", "aborted", "error"]

# Read off the Literal types, so the checks cannot drift from what the constructors are typed to take.
_TURN_END_REASONS: tuple[str, ...] = get_args(TurnEndReason)
_APPROVAL_OUTCOMES: tuple[str, ...] = get_args(ApprovalOutcome)

_Check: TypeAlias = tuple[str, Callable[[Any], bool], str]


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_opt_str(value: Any) -> bool:
    return value is None or type(value) is str


def _is_opt_int(value: Any) -> bool:
    return value is None or type(value) is int


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_any(value: Any) -> bool:
    return True


def _is_content(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(block, dict) and type(block.get("type")) is str for block in value
    )


def _is_tool_calls(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(call, dict) and all(type(call.get(key)) is str for key in ("id", "name", "arguments"))
        for call in value
    )


def _is_usage(value: Any) -> bool:
    return value is None or (
        isinstance(value, dict)
        and _is_opt_int(value.get("input_tokens"))
        and _is_opt_int(value.get("output_tokens"))
    )


def _is_error(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, dict) or type(value.get("message")) is not str:
        return False
    info = value.get("info")
    return info is None or (
        isinstance(info, dict) and _is_str(info.get("name")) and _is_str(info.get("code"))
    )


def _one_of(options: tuple[str, ...]) -> Callable[[Any], bool]:
    return lambda value: value in options and type(value) is str


_STR = "a string"
_OPT_STR = "a string or null"
_CONTENT = 'a list of content blocks ({"type": <string>, ...})'
_CODE_DISPATCH: tuple[_Check, ...] = (
    ("root_call_id", _is_str, _STR),
    ("parent_call_id", _is_str, _STR),
    ("sub_call_id", _is_str, _STR),
    ("name", _is_str, _STR),
    ("arguments", _is_any, "present"),
)
_SCHEMAS: dict[str, tuple[_Check, ...]] = {
    event_records.MODEL_USER: (("content", _is_content, _CONTENT), ("id", _is_opt_str, _OPT_STR)),
    event_records.MODEL_ASSISTANT: (
        ("text", _is_str, _STR),
        ("reasoning", _is_opt_str, _OPT_STR),
        ("tool_calls", _is_tool_calls, "a list of {id, name, arguments} string objects"),
        ("stop_reason", _is_opt_str, _OPT_STR),
        ("usage", _is_usage, "null or {input_tokens, output_tokens} (integers or null)"),
    ),
    event_records.TOOL_CALL: (
        ("call_id", _is_str, _STR),
        ("name", _is_str, _STR),
        ("arguments", _is_str, "the raw arguments string"),
        ("parsed_arguments", _is_any, "present (null when the arguments did not parse)"),
    ),
    event_records.TOOL_RESULT: (
        ("call_id", _is_str, _STR),
        ("name", _is_str, _STR),
        ("content", _is_content, _CONTENT),
        ("is_error", _is_bool, "a boolean"),
        ("error", _is_error, "null or {message: string, info: null or {name, code}}"),
    ),
    event_records.CONTEXT_ADDED: (
        ("call_id", _is_str, _STR),
        ("id", _is_str, _STR),
        ("content", _is_content, _CONTENT),
    ),
    event_records.APPROVAL_ASKED: (
        ("call_id", _is_str, _STR),
        ("tool_name", _is_str, _STR),
        ("reason", _is_opt_str, _OPT_STR),
        ("arguments", _is_any, "present"),
    ),
    event_records.APPROVAL_DECIDED: (
        ("call_id", _is_str, _STR),
        ("tool_name", _is_str, _STR),
        ("outcome", _one_of(_APPROVAL_OUTCOMES), "one of " + ", ".join(_APPROVAL_OUTCOMES)),
    ),
    event_records.CODE_DISPATCH_START: _CODE_DISPATCH,
    event_records.CODE_DISPATCH: (
        *_CODE_DISPATCH,
        ("is_error", _is_bool, "a boolean"),
        ("content", _is_content, _CONTENT),
    ),
    event_records.TURN_START: (("turn", _is_opt_int, "an integer or null"),),
    event_records.TURN_END: (
        ("turn", _is_opt_int, "an integer or null"),
        ("reason", _one_of(_TURN_END_REASONS), "one of " + ", ".join(_TURN_END_REASONS)),
        ("error", _is_opt_str, _OPT_STR),
    ),
}


def check_event_data(type: str, data: Mapping[str, Any]) -> str | None:
    """Why ``data`` does not fit the known ``type`` (``None`` when it does, or the type is unknown).

    Both the writer and :func:`~toolrt.loop._derive.derive_messages` call this, so a log is held to one
    definition of each known type whether it is being written or read back.
    """
    checks = _SCHEMAS.get(type)
    if checks is None:
        return None
    for key, check, expected in checks:
        if key not in data:
            return f"data.{key} is missing"
        if not check(data[key]):
            return f"data.{key} must be {expected}"
    if type == event_records.TOOL_RESULT and (data["error"] is None) == data["is_error"]:
        return "data.error must be set exactly when data.is_error is true"
    return None
