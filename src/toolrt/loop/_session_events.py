"""The session-event vocabulary: the known event types, the records, their data, their constructors.

Everything that handles a session log — the JSONL file (:mod:`toolrt.loop._session_log`), the
derived conversation (:mod:`toolrt.loop._derive`), the replay (:mod:`toolrt.loop._replay`), the
agent loop and the Code Mode bridge — speaks in these terms, and this module imports none of them.

What the ``data`` of each known event type must hold is checked in one place,
:func:`check_event_data`: :meth:`SessionLog.append <toolrt.loop.SessionLog.append>` refuses an event
of a known type whose data does not fit, and :func:`~toolrt.loop.derive_messages` applies the
same check to what it reads, so a log edited by hand or written by another tool cannot derive a
conversation the writer would have refused.

Known event types and their ``data`` (``?`` marks a value that may be ``null``):

``model/user``
    ``{content: [block], id: str?, source: json?}`` — a user message.
``model/assistant``
    ``{text: str, reasoning: str?, tool_calls: [{id, name, arguments: str}], stop_reason: str?,
    usage: {input_tokens: int?, output_tokens: int?, cache_read_input_tokens: int,
    cache_creation_input_tokens: int}?}`` — ``arguments`` is the model's raw text; the cache
    figures are present only when the provider reported them.
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

The agent loop and the Code Mode bridge build their events with the ``*_event`` constructors
instead of writing ``data`` dicts by hand (``log.append(*tool_call_event(...))``), so each type's
keys and conversions (a string to one text block, a tool result to its durable part, unparseable
arguments to ``null``) are spelled once, and always fit :func:`check_event_data`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias, get_args

from toolrt._approval_request import ApprovalOutcome
from toolrt._content import ContentBlock, ContextMessage
from toolrt._json import NotLosslessJsonError, snapshot_json, text_block_content
from toolrt._results import ToolExecutionResult
from toolrt.codemode import _dispatch_log as dispatch_log
from toolrt.loop._messages import AssistantMessage, Usage

__all__ = [
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "CODE_DISPATCH",
    "CODE_DISPATCH_START",
    "CONTEXT_ADDED",
    "MODEL_ASSISTANT",
    "MODEL_USER",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "Event",
    "NewEvent",
    "TurnEndReason",
    "approval_asked_event",
    "approval_decided_event",
    "check_event_data",
    "code_dispatch_event",
    "code_dispatch_start_event",
    "context_added_event",
    "model_assistant_event",
    "model_user_event",
    "tool_call_event",
    "tool_result_event",
    "turn_end_event",
    "turn_start_event",
]

# -- the known event types and the records ----------------------------------------------------------

MODEL_USER = "model/user"
MODEL_ASSISTANT = "model/assistant"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
CONTEXT_ADDED = "context/added"
APPROVAL_ASKED = "approval/asked"
APPROVAL_DECIDED = "approval/decided"
CODE_DISPATCH_START = dispatch_log.CODE_DISPATCH_START
CODE_DISPATCH = dispatch_log.CODE_DISPATCH
TURN_START = "turn/start"
TURN_END = "turn/end"


@dataclass(frozen=True, slots=True)
class Event:
    """One logged event. ``data`` is a frozen lossless-JSON snapshot (read it, never mutate it)."""

    seq: int
    type: str
    time: float
    data: Mapping[str, Any]


class NewEvent(NamedTuple):
    """An event to append, as the ``*_event`` constructors build it: ``log.append(*new_event)``."""

    type: str
    data: dict[str, Any]


# -- what each known type's data must hold ---------------------------------------------------------

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
    MODEL_USER: (("content", _is_content, _CONTENT), ("id", _is_opt_str, _OPT_STR)),
    MODEL_ASSISTANT: (
        ("text", _is_str, _STR),
        ("reasoning", _is_opt_str, _OPT_STR),
        ("tool_calls", _is_tool_calls, "a list of {id, name, arguments} string objects"),
        ("stop_reason", _is_opt_str, _OPT_STR),
        ("usage", _is_usage, "null or {input_tokens, output_tokens} (integers or null)"),
    ),
    TOOL_CALL: (
        ("call_id", _is_str, _STR),
        ("name", _is_str, _STR),
        ("arguments", _is_str, "the raw arguments string"),
        ("parsed_arguments", _is_any, "present (null when the arguments did not parse)"),
    ),
    TOOL_RESULT: (
        ("call_id", _is_str, _STR),
        ("name", _is_str, _STR),
        ("content", _is_content, _CONTENT),
        ("is_error", _is_bool, "a boolean"),
        ("error", _is_error, "null or {message: string, info: null or {name, code}}"),
    ),
    CONTEXT_ADDED: (
        ("call_id", _is_str, _STR),
        ("id", _is_str, _STR),
        ("content", _is_content, _CONTENT),
    ),
    APPROVAL_ASKED: (
        ("call_id", _is_str, _STR),
        ("tool_name", _is_str, _STR),
        ("reason", _is_opt_str, _OPT_STR),
        ("arguments", _is_any, "present"),
    ),
    APPROVAL_DECIDED: (
        ("call_id", _is_str, _STR),
        ("tool_name", _is_str, _STR),
        ("outcome", _one_of(_APPROVAL_OUTCOMES), "one of " + ", ".join(_APPROVAL_OUTCOMES)),
    ),
    CODE_DISPATCH_START: _CODE_DISPATCH,
    CODE_DISPATCH: (
        *_CODE_DISPATCH,
        ("is_error", _is_bool, "a boolean"),
        ("content", _is_content, _CONTENT),
    ),
    TURN_START: (("turn", _is_opt_int, "an integer or null"),),
    TURN_END: (
        ("turn", _is_opt_int, "an integer or null"),
        ("reason", _one_of(_TURN_END_REASONS), "one of " + ", ".join(_TURN_END_REASONS)),
        ("error", _is_opt_str, _OPT_STR),
    ),
}


def check_event_data(type: str, data: Mapping[str, Any]) -> str | None:
    """Why ``data`` does not fit the known ``type`` (``None`` when it does, or the type is unknown).

    Both the writer and :func:`~toolrt.loop.derive_messages` call this, so a log is held to one
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
    if type == TOOL_RESULT and (data["error"] is None) == data["is_error"]:
        return "data.error must be set exactly when data.is_error is true"
    return None


# -- the constructors -------------------------------------------------------------------------------


def model_user_event(
    content: str | Sequence[ContentBlock], *, id: str | None = None, source: Any = None
) -> NewEvent:
    """``model/user``: a user message (a string becomes one text block)."""
    blocks = text_block_content(content) if isinstance(content, str) else list(content)
    return NewEvent(MODEL_USER, {"content": blocks, "id": id, "source": source})


def model_assistant_event(message: AssistantMessage, usage: Usage | None = None) -> NewEvent:
    """``model/assistant``: what the model said, its calls with their raw argument text, and usage."""
    return NewEvent(
        MODEL_ASSISTANT,
        {
            "text": message.text,
            "reasoning": message.reasoning,
            "tool_calls": [
                {"id": call.id, "name": call.name, "arguments": call.arguments} for call in message.tool_calls
            ],
            "stop_reason": message.stop_reason,
            "usage": None if usage is None else _usage_data(usage),
        },
    )


def _usage_data(usage: Usage) -> dict[str, int | None]:
    # Cache figures only when reported, so a provider without a prompt cache logs what it always did.
    data = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_input_tokens is not None:
        data["cache_read_input_tokens"] = usage.cache_read_input_tokens
    if usage.cache_creation_input_tokens is not None:
        data["cache_creation_input_tokens"] = usage.cache_creation_input_tokens
    return data


def tool_call_event(
    call_id: str, name: str, arguments: str, parsed_arguments: Any, *, agent: Any = None
) -> NewEvent:
    """``tool/call``: a call about to run — the raw argument text and what it parsed to (or ``None``).

    Parsed arguments that are not lossless JSON (the model wrote ``NaN``, ``-0.0`` or ``1e999``,
    which Python's ``json`` accepts) are logged as ``null``: the raw text is the record of what the
    model sent, and a call record must never be unloggable. ``agent`` must be JSON (an id, not a
    scope object): replay passes it to ``runtime.get``.
    """
    try:
        parsed_arguments = snapshot_json(parsed_arguments, "parsed_arguments")
    except NotLosslessJsonError:
        parsed_arguments = None
    return NewEvent(
        TOOL_CALL,
        {
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "parsed_arguments": parsed_arguments,
            "agent": agent,
        },
    )


def tool_result_event(call_id: str, name: str, result: ToolExecutionResult) -> NewEvent:
    """``tool/result``: the durable part of a result (content, error, meta — never the value)."""
    error: dict[str, Any] | None = None
    if result.is_error:
        failure = result.error
        info = failure.info
        error = {
            "message": failure.message,
            "info": None if info is None else {"name": info.name, "code": info.code},
        }
    return NewEvent(
        TOOL_RESULT,
        {
            "call_id": call_id,
            "name": name,
            "content": result.content,
            "is_error": result.is_error,
            "error": error,
            "meta": result.meta,
        },
    )


def context_added_event(call_id: str, message: ContextMessage | Mapping[str, Any]) -> NewEvent:
    """``context/added``: an additional context (``{id, content, source?}``) after ``call_id``'s result."""
    return NewEvent(
        CONTEXT_ADDED,
        {
            "call_id": call_id,
            "id": message["id"],
            "content": message["content"],
            "source": message.get("source"),
        },
    )


def approval_asked_event(
    call_id: str, tool_name: str, *, reason: str | None, arguments: Any, agent: Any = None
) -> NewEvent:
    """``approval/asked``: a human was asked whether ``tool_name`` may run with ``arguments``."""
    return NewEvent(
        APPROVAL_ASKED,
        {
            "call_id": call_id,
            "tool_name": tool_name,
            "reason": reason,
            "arguments": arguments,
            "agent": agent,
        },
    )


def approval_decided_event(call_id: str, tool_name: str, outcome: ApprovalOutcome) -> NewEvent:
    """``approval/decided``: the answer (an ``ApprovalOutcome``)."""
    return NewEvent(APPROVAL_DECIDED, {"call_id": call_id, "tool_name": tool_name, "outcome": outcome})


def code_dispatch_start_event(**fields: Any) -> NewEvent:
    """``tool/code-dispatch-start``: a ``run_code`` sub-call started (log-only).

    Code Mode makes these events (:func:`toolrt.codemode._dispatch_log.code_dispatch_start_event`,
    same keyword fields); the loop only wraps them, so the two can never drift apart.
    """
    return NewEvent(*dispatch_log.code_dispatch_start_event(**fields))


def code_dispatch_event(**fields: Any) -> NewEvent:
    """``tool/code-dispatch``: a ``run_code`` sub-call settled (log-only); see
    :func:`code_dispatch_start_event` for why it wraps Code Mode's constructor."""
    return NewEvent(*dispatch_log.code_dispatch_event(**fields))


def turn_start_event(turn: int | None = None, *, agent: Any = None) -> NewEvent:
    """``turn/start``."""
    return NewEvent(TURN_START, {"turn": turn, "agent": agent})


def turn_end_event(reason: TurnEndReason, *, turn: int | None = None, error: str | None = None) -> NewEvent:
    """``turn/end`` with why the turn ended (``error`` carries the message when ``reason="error"``)."""
    return NewEvent(TURN_END, {"turn": turn, "reason": reason, "error": error})
