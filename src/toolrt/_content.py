"""Model-facing content blocks and the context messages that ride after a tool result.

Content is what the model reads: a list of JSON blocks such as ``{"type": "text", "text": "..."}``.
Results carry it as frozen lists of frozen dicts (see :mod:`toolrt._json`), so a listener can read it
like ordinary data but cannot change what another listener or the log will see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from toolrt._json import text_block_content

__all__ = [
    "ContentBlock",
    "ContextMessage",
    "ContextSource",
    "TextBlock",
    "content_text",
    "text_content",
    "user_message",
]


class TextBlock(TypedDict):
    """A plain text block, the most common content."""

    type: Literal["text"]
    text: str


ContentBlock: TypeAlias = Mapping[str, Any]
"""Any content block: ``{"type": ..., ...}``. ``TextBlock`` is the common one."""


class ContextSource(TypedDict):
    """Who minted an additional context (for logs and UIs): ``{"kind": "plugin", "plugin": name}``."""

    kind: str
    plugin: NotRequired[str]


class ContextMessage(TypedDict):
    """An additional context: an identified user message appended after a tool result.

    It rides in ``additional_contexts`` (and ``defer_context``) and is logged as ``context/added``;
    the conversation's own user message is :class:`toolrt.loop.UserMessage`.
    """

    id: str
    role: Literal["user"]
    content: Sequence[ContentBlock]
    source: NotRequired[ContextSource]


def text_content(text: str) -> Any:
    """One frozen text block: ``[{"type": "text", "text": text}]``."""
    return text_block_content(text)


def content_text(content: Sequence[ContentBlock]) -> str:
    """The text of every ``text`` block joined by newlines; other blocks read ``[<type> content]``."""
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        parts.append(str(block.get("text", "")) if kind == "text" else f"[{kind} content]")
    return "\n".join(parts)


def user_message(
    message_id: str, text: str, *, plugin: str | None = None, source_kind: str = "plugin"
) -> ContextMessage:
    """Build a context message for ``defer_context`` / ``Accept(additional_contexts=...)``.

    >>> user_message("ctx-1", "remember the lint rules", plugin="lint")["source"]
    {'kind': 'plugin', 'plugin': 'lint'}
    """
    source: ContextSource = {"kind": source_kind}
    if plugin is not None:
        source["plugin"] = plugin
    return {"id": message_id, "role": "user", "content": [{"type": "text", "text": text}], "source": source}
