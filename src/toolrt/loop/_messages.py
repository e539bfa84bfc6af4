"""The provider-neutral conversation: what the agent loop, the session log and the adapters share.

A conversation is a list of :data:`Message`. Model adapters convert it to and from a provider's
wire format (OpenAI Chat Completions, Anthropic Messages); the session log stores the events it
is derived from; the agent loop appends to it.

Tool call arguments stay the model's *raw* JSON text (:attr:`ToolCall.arguments`): the loop parses
them (malformed JSON becomes an ``INVALID_ARGS`` result the model can read, never a silent ``{}``),
and the raw text is what goes back to the provider, so the model sees its own call verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from toolrt._content import ContentBlock
from toolrt._errors import readable_message
from toolrt._json import has_lone_surrogate

__all__ = [
    "AssistantMessage",
    "Message",
    "ModelRequest",
    "SystemMessage",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "encodable_assistant_message",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model emitted: its id, the tool name, the raw JSON arguments text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """The assembled system prompt."""

    text: str
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user turn, or an additional context appended after a tool result (``id``/``source`` set)."""

    content: Sequence[ContentBlock]
    id: str | None = None
    source: Any = None
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model said: text, optional reasoning, and the tool calls it wants made, in order."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    stop_reason: str | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The result of one tool call, as the model reads it (content) — always paired with its call."""

    call_id: str
    name: str
    content: Sequence[ContentBlock]
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True)
class Usage:
    """Token accounting a provider reported for one model call (``None`` when not reported).

    ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` are the prompt-cache reads and
    writes (Anthropic reports them beside ``input_tokens``, which then counts only uncached input):
    they are what shows whether a byte-stable prompt actually earned cache hits.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call: the system prompt, the conversation so far, and the tool schemas to offer."""

    system: str
    messages: Sequence[Message]
    tools: Sequence[Any] = field(default=())


def encodable_assistant_message(message: AssistantMessage) -> AssistantMessage:
    """``message`` with every string valid UTF-8, so the conversation and its log can hold it.

    Why: a provider's JSON may carry a ``\\ud800`` escape, which decodes to a lone surrogate that
    no UTF-8 writer (the session log, the next request, a terminal) can encode; refusing the whole
    reply would break the turn over one bad character. Prose (text, reasoning, ids, names) gets
    U+FFFD in its place. Argument text gets the escape back (``\\ud800``), so inside a JSON string
    the parsed value still holds the surrogate and the pipeline refuses it as ``INVALID_ARGS``, as
    it would any non-lossless argument, instead of running the tool on a silently altered value.
    The common case (nothing to change) returns ``message`` itself.
    """
    strings = [message.text, message.reasoning or ""]
    for call in message.tool_calls:
        strings += (call.id, call.name, call.arguments)
    if not any(has_lone_surrogate(text) for text in strings):
        return message
    calls = tuple(
        ToolCall(
            id=readable_message(call.id, None),
            name=readable_message(call.name, None),
            arguments=call.arguments.encode("utf-8", "backslashreplace").decode("utf-8"),
        )
        for call in message.tool_calls
    )
    reasoning = None if message.reasoning is None else readable_message(message.reasoning, None)
    return replace(message, text=readable_message(message.text, None), reasoning=reasoning, tool_calls=calls)
