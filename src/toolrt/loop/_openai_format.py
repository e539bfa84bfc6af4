"""OpenAI Chat Completions wire format (also DeepSeek, vLLM, Ollama and other compatible servers).

Pure conversions between toolrt's provider-neutral conversation and the ``openai`` package's
request TypedDicts / response models. ``openai`` is only imported for type checking, so importing
this module (or ``toolrt``) never imports it.

* Tool call arguments travel as the model's raw JSON text, in both directions.
* The results of one assistant message become ``role: tool`` messages right after it, in the
  message's call order (reordered if the conversation lists them in completion order); a call with
  no result or a result with no call raises :class:`~toolrt.loop.ConversationError`.
* Content blocks are flattened to text (non-text blocks read ``[<type> content]``); an error result
  keeps its ``Error: ...`` text, since Chat Completions has no error flag for tool messages.
* User messages found among the results (additional contexts) follow all of the tool messages.
* Reasoning (``reasoning_content``, as DeepSeek and others send it) is read from responses and, by
  default, sent back on assistant messages that made tool calls: DeepSeek's thinking mode requires
  it there and ignores it elsewhere; OpenAI never produces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from toolrt._content import ContentBlock, content_text
from toolrt.loop._messages import AssistantMessage, Message, SystemMessage, ToolCall, UserMessage
from toolrt.loop._turns import ToolTurn, group_turns, schema_parts

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessage,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )

__all__ = ["from_openai_message", "reasoning_of", "to_openai_messages", "to_openai_tools"]


def to_openai_tools(schemas: Iterable[Mapping[str, Any]]) -> list[ChatCompletionFunctionToolParam]:
    """``[{"type": "function", "function": {"name", "description", "parameters"}}, ...]``.

    ``schemas`` are :class:`toolrt.ToolSchema` mappings (what ``ToolRuntime.schemas`` returns).
    """
    tools: list[ChatCompletionFunctionToolParam] = []
    for schema in schemas:
        name, description, parameters = schema_parts(schema)
        tools.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": parameters},
            }
        )
    return tools


def to_openai_messages(
    system: str, messages: Sequence[Message], *, include_reasoning: bool = True
) -> list[ChatCompletionMessageParam]:
    """The Chat Completions ``messages`` for a system prompt and a conversation.

    ``system`` (when non-empty) comes first; :class:`SystemMessage` entries stay where they are.
    ``include_reasoning=False`` never sends ``reasoning_content`` back (see the module notes).
    """
    out: list[ChatCompletionMessageParam] = []
    if system:
        out.append({"role": "system", "content": system})
    for turn in group_turns(messages):
        if isinstance(turn, ToolTurn):
            out.append(_assistant_param(turn.assistant, include_reasoning))
            for result in turn.results:
                out.append({"role": "tool", "tool_call_id": result.call_id, "content": _text(result.content)})
            for user in turn.after:
                out.append(_user_param(user))
        elif isinstance(turn, SystemMessage):
            out.append({"role": "system", "content": turn.text})
        elif isinstance(turn, UserMessage):
            out.append(_user_param(turn))
        else:
            out.append(_assistant_param(turn, include_reasoning))
    return out


def from_openai_message(
    choice_message: ChatCompletionMessage, *, finish_reason: str | None = None
) -> AssistantMessage:
    """An :class:`AssistantMessage` from ``completion.choices[0].message``.

    Tool calls keep their raw ``arguments`` text (malformed JSON included: the agent loop, not the
    adapter, turns it into an ``INVALID_ARGS`` result). A refusal with no content becomes the text.
    """
    text = choice_message.content or choice_message.refusal or ""
    calls: list[ToolCall] = []
    for position, call in enumerate(choice_message.tool_calls or ()):
        call_id = call.id or f"call_{position}"
        if call.type == "function":
            calls.append(ToolCall(call_id, call.function.name, call.function.arguments or ""))
        else:  # a custom (free-form input) tool call
            calls.append(ToolCall(call_id, call.custom.name, call.custom.input))
    return AssistantMessage(
        text=text,
        tool_calls=tuple(calls),
        reasoning=reasoning_of(choice_message),
        stop_reason=finish_reason,
    )


def reasoning_of(message_or_delta: object) -> str | None:
    """The non-standard reasoning text of a message or stream delta, if the server sent any.

    DeepSeek (and SGLang, LM Studio, ...) send ``reasoning_content``; vLLM and Ollama send
    ``reasoning``. The ``openai`` models keep unknown fields, so both are plain attributes.
    """
    for field in ("reasoning_content", "reasoning"):
        value = getattr(message_or_delta, field, None)
        if isinstance(value, str):
            return value
    return None


def _assistant_param(
    message: AssistantMessage, include_reasoning: bool
) -> ChatCompletionAssistantMessageParam:
    param: ChatCompletionAssistantMessageParam = {"role": "assistant"}
    param["content"] = message.text if message.text or not message.tool_calls else None
    if message.tool_calls:
        calls: list[ChatCompletionMessageFunctionToolCallParam] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
        param["tool_calls"] = calls
        if include_reasoning and message.reasoning:
            # Not in the official TypedDict: DeepSeek's thinking mode needs it back on tool-call turns.
            cast(dict[str, Any], param)["reasoning_content"] = message.reasoning
    return param


def _user_param(message: UserMessage) -> ChatCompletionMessageParam:
    return {"role": "user", "content": _text(message.content)}


def _text(content: Sequence[ContentBlock] | str) -> str:
    if isinstance(content, str):
        return content
    return content_text(content)
