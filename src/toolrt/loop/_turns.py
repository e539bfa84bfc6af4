"""Pairing tool calls with their results before a conversation goes on the wire.

Both provider formats need the same guarantees, and both reject a request (HTTP 400) that breaks
them: every call of an assistant message has exactly one result, every result answers a call of the
assistant message right before it, and the results follow that message in the model's *call order*
(not completion order, which varies from run to run and breaks prompt caching). :func:`group_turns`
checks all of that once, so the two adapters only decide the wire shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from toolrt._errors import ConversationError
from toolrt.loop._messages import AssistantMessage, Message, SystemMessage, ToolResultMessage, UserMessage

__all__ = ["ConversationError", "ToolTurn", "Turn", "group_turns", "schema_parts"]


@dataclass(frozen=True, slots=True)
class ToolTurn:
    """An assistant message with tool calls, its results in call order, then the user messages.

    ``after`` holds the user messages found among or after the results (additional contexts a tool
    appended, or a user turn), in their original order: both providers want them after all results.
    """

    assistant: AssistantMessage
    results: tuple[ToolResultMessage, ...]
    after: tuple[UserMessage, ...]


Turn: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolTurn


def group_turns(messages: Sequence[Message]) -> list[Turn]:
    """Group ``messages`` into turns, pairing every tool call with exactly one result.

    Results are reordered to the assistant message's call order. Raises :class:`ConversationError`
    for a call with no result, a result with no call (or one answering a call of an earlier
    assistant message), a second result for one call, or two calls sharing an id.
    """
    turns: list[Turn] = []
    index = 0
    count = len(messages)
    while index < count:
        message = messages[index]
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = message.tool_calls
            call_ids: dict[str, int] = {}
            for position, call in enumerate(calls):
                if call.id in call_ids:
                    raise ConversationError(
                        f'assistant message at position {index} has two tool calls with id "{call.id}"'
                    )
                call_ids[call.id] = position
            results: dict[str, ToolResultMessage] = {}
            after: list[UserMessage] = []
            index += 1
            while index < count:
                follower = messages[index]
                if isinstance(follower, ToolResultMessage):
                    if follower.call_id not in call_ids:
                        raise ConversationError(_orphan(follower, index, "the preceding assistant message"))
                    if follower.call_id in results:
                        raise ConversationError(
                            f'tool call "{follower.call_id}" ({follower.name}) has more than one result'
                            f" (second at position {index})"
                        )
                    results[follower.call_id] = follower
                elif isinstance(follower, UserMessage):
                    after.append(follower)
                else:
                    break
                index += 1
            missing = [call for call in calls if call.id not in results]
            if missing:
                listed = ", ".join(f'"{call.id}" ({call.name})' for call in missing)
                plural = len(missing) > 1
                raise ConversationError(
                    f"tool call{'s' if plural else ''} {listed} ha{'ve' if plural else 's'} no result:"
                    " every call the model made needs a result before the next model request"
                )
            turns.append(ToolTurn(message, tuple(results[call.id] for call in calls), tuple(after)))
            continue
        if isinstance(message, ToolResultMessage):
            raise ConversationError(_orphan(message, index, "an assistant message right before it"))
        if not isinstance(message, SystemMessage | UserMessage | AssistantMessage):
            raise TypeError(f"not a conversation message at position {index}: {message!r}")
        turns.append(message)
        index += 1
    return turns


def _orphan(result: ToolResultMessage, index: int, where: str) -> str:
    return (
        f'tool result for call "{result.call_id}" ({result.name}) at position {index} has no matching'
        f" tool call in {where}"
    )


def schema_parts(schema: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """``(name, description, parameters)`` of a :class:`toolrt.ToolSchema` mapping."""
    if not isinstance(schema, Mapping):
        raise TypeError(f"a tool schema must be a mapping with name/description/parameters, got {schema!r}")
    name = schema["name"]
    description = schema.get("description") or ""
    parameters = schema.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    # A shallow copy: the request must not alias (and let a caller mutate) the registry's schema.
    return str(name), str(description), dict(parameters)
