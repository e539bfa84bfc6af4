"""Anthropic Messages wire format.

Pure conversions between toolrt's provider-neutral conversation and the ``anthropic`` package's
request TypedDicts / response models. ``anthropic`` is only imported for type checking, so importing
this module (or ``toolrt``) never imports it.

* All ``tool_result`` blocks answering one assistant turn go in ONE user message, in the turn's
  call order, with ``is_error: true`` for error results; additional contexts (and any user turn that
  follows the results) are appended to that same message as blocks *after* the results, because
  Anthropic requires the results to come first.
* A call with no result or a result with no call raises
  :class:`~toolrt.loop.ConversationError` before anything is sent.
* Tool call arguments are raw JSON text in toolrt but an object on this wire: valid JSON objects are
  parsed, empty text is ``{}``, and anything else (malformed JSON a model produced elsewhere) is
  wrapped as ``{"_raw_arguments": text}`` so the model still sees what it sent rather than a silent
  ``{}``. Responses go the other way with ``json.dumps(input)``.
* Text and image blocks pass through (MCP-style ``{"type": "image", "data", "mimeType"}`` becomes a
  base64 image source); other blocks read ``[<type> content]``; empty text blocks, which the API
  rejects, are dropped. Adjacent messages of one role are merged into one.
* System messages are hoisted into the top-level ``system`` text. Reasoning is read from ``thinking``
  blocks but not sent back: :class:`~toolrt.loop._messages.AssistantMessage` does not carry the
  block signature the API would require.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from toolrt._content import ContentBlock
from toolrt.loop._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from toolrt.loop._turns import ToolTurn, group_turns, schema_parts

if TYPE_CHECKING:
    from anthropic.types import (
        ContentBlockParam,
        ImageBlockParam,
        MessageParam,
        TextBlockParam,
        ToolParam,
        ToolResultBlockParam,
    )
    from anthropic.types import Message as AnthropicMessage

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "from_anthropic_message",
    "to_anthropic_messages",
    "to_anthropic_tools",
]

RAW_ARGUMENTS_KEY = "_raw_arguments"
"""The ``tool_use.input`` key that carries arguments text which is not a JSON object."""


def to_anthropic_tools(schemas: Iterable[Mapping[str, Any]]) -> list[ToolParam]:
    """``[{"name", "description", "input_schema"}, ...]`` from :class:`toolrt.ToolSchema` mappings."""
    tools: list[ToolParam] = []
    for schema in schemas:
        name, description, parameters = schema_parts(schema)
        tools.append({"name": name, "description": description, "input_schema": parameters})
    return tools


def to_anthropic_messages(messages: Sequence[Message], *, system: str = "") -> tuple[str, list[MessageParam]]:
    """``(system, messages)`` for ``client.messages.create(system=..., messages=...)``.

    ``system`` is the keyword argument followed by the text of every :class:`SystemMessage`, joined
    by blank lines (``""`` when there is none: pass ``system`` only when it is non-empty).
    """
    system_parts = [system] if system else []
    out: list[MessageParam] = []
    for turn in group_turns(messages):
        if isinstance(turn, ToolTurn):
            _append(out, "assistant", _assistant_blocks(turn.assistant))
            blocks: list[ContentBlockParam] = [_tool_result(result) for result in turn.results]
            for user in turn.after:
                blocks.extend(_blocks(user.content))
            _append(out, "user", blocks)
        elif isinstance(turn, SystemMessage):
            if turn.text:
                system_parts.append(turn.text)
        elif isinstance(turn, UserMessage):
            _append(out, "user", _blocks(turn.content))
        else:
            _append(out, "assistant", _assistant_blocks(turn))
    return "\n\n".join(system_parts), out


def from_anthropic_message(message: AnthropicMessage) -> AssistantMessage:
    """An :class:`AssistantMessage` from a Messages API response.

    Text blocks are concatenated, ``tool_use`` blocks become calls with ``json.dumps(input)`` as the
    raw arguments, ``thinking`` blocks become the reasoning; other blocks (server tools, redacted
    thinking) are not part of the neutral conversation and are skipped.
    """
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(block.id, block.name, _dump_input(block.input)))
        elif block.type == "thinking":
            reasoning.append(block.thinking)
    return AssistantMessage(
        text="".join(text),
        tool_calls=tuple(calls),
        reasoning="".join(reasoning) if reasoning else None,
        stop_reason=message.stop_reason,
    )


def _append(out: list[MessageParam], role: str, blocks: list[ContentBlockParam]) -> None:
    if not blocks:
        return  # an empty turn is rejected by the API and says nothing
    if out and out[-1]["role"] == role:
        previous = cast(list[Any], out[-1]["content"])
        previous.extend(blocks)
        return
    if role == "user":
        out.append({"role": "user", "content": blocks})
    else:
        out.append({"role": "assistant", "content": blocks})


def _assistant_blocks(message: AssistantMessage) -> list[ContentBlockParam]:
    blocks: list[ContentBlockParam] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _parse_input(call.arguments)}
        )
    return blocks


def _tool_result(result: ToolResultMessage) -> ToolResultBlockParam:
    block: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": result.call_id}
    content = _blocks(result.content)
    if content:
        block["content"] = cast(Any, content)
    if result.is_error:
        block["is_error"] = True
    return block


def _blocks(content: Sequence[ContentBlock] | str) -> list[ContentBlockParam]:
    if isinstance(content, str):
        return [_text_block(content)] if content else []
    blocks: list[ContentBlockParam] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text", ""))
            if text:
                blocks.append(_text_block(text))
        elif kind == "image" and (image := _image_block(block)) is not None:
            blocks.append(image)
        else:
            blocks.append(_text_block(f"[{kind} content]"))
    return blocks


def _text_block(text: str) -> TextBlockParam:
    return {"type": "text", "text": text}


def _image_block(block: ContentBlock) -> ImageBlockParam | None:
    source = block.get("source")
    if isinstance(source, Mapping):
        return cast("ImageBlockParam", {"type": "image", "source": dict(source)})
    data = block.get("data")
    media_type = block.get("mimeType") or block.get("mime_type") or block.get("media_type")
    if isinstance(data, str) and isinstance(media_type, str):
        return cast(
            "ImageBlockParam",
            {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}},
        )
    return None


def _parse_input(arguments: str) -> dict[str, object]:
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: arguments}
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS_KEY: arguments}


def _dump_input(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
