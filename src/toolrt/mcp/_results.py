"""An MCP ``CallToolResult`` as a toolrt value: ``structuredContent`` when there is one, else the content.

MCP content blocks map onto toolrt's model-facing blocks: ``text`` stays text; ``image`` and
``audio`` keep the MCP shape (``{"type", "data", "mimeType"}``, which the message formatters already
pass through); an embedded text resource reads as its text; a resource link or a binary resource
becomes a short text line naming its URI, so the model learns it exists without a base64 flood.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolrt._content import ContentBlock, content_text
from toolrt._tool_definition import render_value_as_text

__all__ = ["content_blocks", "error_text", "render_mcp_value", "result_value"]


def _block(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": str(block.text)}
    if kind in ("image", "audio"):
        return {"type": kind, "data": str(block.data), "mimeType": str(block.mime_type)}
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return {"type": "text", "text": text}
        mime = getattr(resource, "mime_type", None) or "application/octet-stream"
        return {"type": "text", "text": f"[binary resource {resource.uri} ({mime})]"}
    if kind == "resource_link":
        label = f" ({block.name})" if getattr(block, "name", None) else ""
        return {"type": "text", "text": f"[resource link: {block.uri}{label}]"}
    return {"type": "text", "text": f"[{kind} content]"}


def content_blocks(content: Sequence[Any]) -> list[dict[str, Any]]:
    """The MCP content blocks as toolrt content blocks (see the module docstring)."""
    return [_block(block) for block in content]


def result_value(structured: Any, content: Sequence[Any]) -> Any:
    """The canonical value: ``structuredContent``; else the text when every block is text; else the blocks.

    Most servers answer with text, and a Code Mode program wants ``"12:00"``, not
    ``[{"type": "text", "text": "12:00"}]``; a result carrying an image keeps its blocks.
    """
    if structured is not None:
        return structured
    blocks = content_blocks(content)
    if all(block["type"] == "text" for block in blocks):
        return "\n".join(block["text"] for block in blocks)
    return blocks


def render_mcp_value(args: Any, value: Any) -> Sequence[ContentBlock]:
    """What the model reads: a block list verbatim, anything else as ``render_value_as_text`` does."""
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(block, dict) and isinstance(block.get("type"), str) for block in value)
    ):
        return list(value)
    return render_value_as_text(args, value)


def error_text(content: Sequence[Any]) -> str:
    """The server's own words for an ``isError`` result (what the model reads after ``Error:``)."""
    text = content_text(content_blocks(content)).strip()
    return text or "the MCP tool reported an error without a message"
