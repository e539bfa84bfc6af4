"""The conversation derived from a session log: :func:`derive_messages`.

The log, not an in-memory message list, is the source of truth of a session. Rebuilding the
provider-neutral messages from its events is what lets a session resume after a crash or a restart
(``SessionLog.resume(path).messages()``), with every tool call paired with exactly one result.
"""

from __future__ import annotations

from collections.abc import Iterable

from toolrt._errors import InvalidEventError
from toolrt._json import text_block_content
from toolrt.loop._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from toolrt.loop._session_events import (
    CONTEXT_ADDED,
    MODEL_ASSISTANT,
    MODEL_USER,
    TOOL_RESULT,
    Event,
    check_event_data,
)

__all__ = ["INCOMPLETE_CALL_TEXT", "derive_messages"]

INCOMPLETE_CALL_TEXT = "Error: tool call did not complete (the session ended before its result was recorded)"
"""The content of the synthetic result :func:`derive_messages` gives a call without a logged result."""


class _Batch:
    """The tool calls of one assistant message, and what the log recorded for them so far."""

    __slots__ = ("calls", "contexts", "deferred", "results")

    def __init__(self, calls: tuple[ToolCall, ...]) -> None:
        self.calls = calls
        self.results: dict[str, ToolResultMessage] = {}
        self.contexts: dict[str, list[UserMessage]] = {call.id: [] for call in calls}
        self.deferred: list[UserMessage] = []

    def close(self, out: list[Message]) -> None:
        for call in self.calls:
            result = self.results.get(call.id)
            if result is None:
                result = ToolResultMessage(call.id, call.name, text_block_content(INCOMPLETE_CALL_TEXT), True)
            out.append(result)
        for call in self.calls:
            out.extend(self.contexts[call.id])
        out.extend(self.deferred)


def derive_messages(events: Iterable[Event]) -> list[Message]:
    """Rebuild the provider-neutral conversation from logged events.

    * ``model/user`` and ``model/assistant`` events become user and assistant messages.
    * After an assistant message with tool calls come its results **in the model's call order**,
      however the ``tool/result`` events interleave in the log; then the ``context/added`` messages
      of those calls, again in call order (a call's own contexts in log order).
    * A call without a logged result (the session ended mid-batch) gets a synthetic error result
      (:data:`INCOMPLETE_CALL_TEXT`), so every call has exactly one result. (Deriving a *live* log
      mid-batch therefore shows placeholders for the calls still running.)
    * A user message logged while a batch is still open is placed after that batch.
    * ``tool/call``, ``approval/*``, ``tool/code-dispatch*``, ``turn/*`` and unknown events derive
      nothing.

    Raises :class:`InvalidEventError` for a malformed message event, a result or context whose
    ``call_id`` is not a call of the open assistant message, a second result for one call, or an
    assistant message repeating a call id.
    """
    out: list[Message] = []
    batch: _Batch | None = None
    for event in events:
        kind = event.type
        if kind not in _DERIVED:
            continue
        data = event.data
        problem = check_event_data(kind, data)
        if problem is not None:
            raise InvalidEventError(f"event {event.seq} ({kind}): {problem}")
        if kind == MODEL_USER:
            message = UserMessage(data["content"], data["id"], data.get("source"))
            if batch is None:
                out.append(message)
            else:
                batch.deferred.append(message)
        elif kind == MODEL_ASSISTANT:
            if batch is not None:
                batch.close(out)
                batch = None
            calls = tuple(
                ToolCall(call["id"], call["name"], call["arguments"]) for call in data["tool_calls"]
            )
            out.append(AssistantMessage(data["text"], calls, data["reasoning"], data["stop_reason"]))
            if calls:
                batch = _Batch(calls)
                if len(batch.contexts) != len(calls):
                    raise InvalidEventError(f"event {event.seq} ({kind}): repeated tool call id")
        else:
            call_id = data["call_id"]
            if batch is None or call_id not in batch.contexts:
                raise InvalidEventError(
                    f"event {event.seq} ({kind}): call {call_id!r} is not a tool call of the preceding"
                    " assistant message"
                )
            if kind == TOOL_RESULT:
                if call_id in batch.results:
                    raise InvalidEventError(f"event {event.seq} ({kind}): second result for call {call_id!r}")
                batch.results[call_id] = ToolResultMessage(
                    call_id, data["name"], data["content"], data["is_error"]
                )
            else:
                batch.contexts[call_id].append(UserMessage(data["content"], data["id"], data.get("source")))
    if batch is not None:
        batch.close(out)
    return out


_DERIVED = frozenset((MODEL_USER, MODEL_ASSISTANT, TOOL_RESULT, CONTEXT_ADDED))
