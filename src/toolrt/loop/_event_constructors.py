"""Constructors for the known event types: ``log.append(*tool_call_event(...))``.

The agent loop and the code-mode bridge build their events here instead of writing ``data`` dicts
by hand, so each type's keys and conversions (a string to one text block, a tool result to its
durable part, unparseable arguments to ``null``) are spelled once, and always fit
:mod:`toolrt.loop._event_schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolrt._approval_request import ApprovalOutcome
from toolrt._content import ContentBlock
from toolrt._content import UserMessage as ContextMessage
from toolrt._json import NotLosslessJsonError, snapshot_json, text_block_content
from toolrt._results import ToolExecutionResult
from toolrt.loop import _event_records as event_records
from toolrt.loop._event_records import NewEvent
from toolrt.loop._event_schema import TurnEndReason
from toolrt.loop._messages import AssistantMessage, Usage

__all__ = [
    "approval_asked_event",
    "approval_decided_event",
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


def model_user_event(
    content: str | Sequence[ContentBlock], *, id: str | None = None, source: Any = None
) -> NewEvent:
    """``model/user``: a user message (a string becomes one text block)."""
    blocks = text_block_content(content) if isinstance(content, str) else list(content)
    return NewEvent(event_records.MODEL_USER, {"content": blocks, "id": id, "source": source})


def model_assistant_event(message: AssistantMessage, usage: Usage | None = None) -> NewEvent:
    """``model/assistant``: what the model said, its calls with their raw argument text, and usage."""
    return NewEvent(
        event_records.MODEL_ASSISTANT,
        {
            "text": message.text,
            "reasoning": message.reasoning,
            "tool_calls": [
                {"id": call.id, "name": call.name, "arguments": call.arguments} for call in message.tool_calls
            ],
            "stop_reason": message.stop_reason,
            "usage": None
            if usage is None
            else {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        },
    )


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
        event_records.TOOL_CALL,
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
        event_records.TOOL_RESULT,
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
        event_records.CONTEXT_ADDED,
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
        event_records.APPROVAL_ASKED,
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
    return NewEvent(
        event_records.APPROVAL_DECIDED, {"call_id": call_id, "tool_name": tool_name, "outcome": outcome}
    )


def code_dispatch_start_event(
    *, root_call_id: str, parent_call_id: str, sub_call_id: str, name: str, arguments: Any, agent: Any = None
) -> NewEvent:
    """``tool/code-dispatch-start``: a ``run_code`` sub-call started (log-only)."""
    return NewEvent(
        event_records.CODE_DISPATCH_START,
        {
            "root_call_id": root_call_id,
            "parent_call_id": parent_call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
            "agent": agent,
        },
    )


def code_dispatch_event(
    *,
    root_call_id: str,
    parent_call_id: str,
    sub_call_id: str,
    name: str,
    arguments: Any,
    is_error: bool,
    content: Sequence[ContentBlock],
    agent: Any = None,
) -> NewEvent:
    """``tool/code-dispatch``: a ``run_code`` sub-call settled (log-only)."""
    return NewEvent(
        event_records.CODE_DISPATCH,
        {
            "root_call_id": root_call_id,
            "parent_call_id": parent_call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
            "is_error": is_error,
            "content": content,
            "agent": agent,
        },
    )


def turn_start_event(turn: int | None = None, *, agent: Any = None) -> NewEvent:
    """``turn/start``."""
    return NewEvent(event_records.TURN_START, {"turn": turn, "agent": agent})


def turn_end_event(reason: TurnEndReason, *, turn: int | None = None, error: str | None = None) -> NewEvent:
    """``turn/end`` with why the turn ended (``error`` carries the message when ``reason="error"``)."""
    return NewEvent(event_records.TURN_END, {"turn": turn, "reason": reason, "error": error})
