"""Spill policy: oversized results go to disk; the model gets a preview and a locator.

A tool that returns a megabyte of text would fill the model's context and be resent on every turn.
With the policy installed, content longer than ``max_chars`` is written whole to a :class:`SpillStore`
(under the session's folder) and the model reads instead::

    <the first preview_chars characters>
    …
    [output truncated: 1,234,567 characters in total. The full output is saved as spill://c1-3f2a.
    Read more with read_spill({"locator": "spill://c1-3f2a", "offset": 2000}).]

``read_spill`` is a tool (:func:`spill_reader_tool`) so the model can page through it. Only the
model-facing content changes: the canonical value is untouched (Code Mode bindings still get it),
and nothing is lost — the store keeps the exact content blocks and their text.

The same store serves Code Mode's ``tools/code-dispatch-log`` hook (:func:`spill_dispatch_log`),
which bounds the durable log copy of each sub-call.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrt._content import ContentBlock, content_text
from toolrt._decisions import UNSET, Accept, PostToolDecision
from toolrt._events import Disposer
from toolrt._execution import ToolExecution
from toolrt._json import thaw
from toolrt._results import ToolExecutionResult
from toolrt._tool_builder import define_tool
from toolrt._tool_definition import ToolDefinition

if TYPE_CHECKING:
    from toolrt._tool_runtime import Scope, ToolRuntime

__all__ = [
    "SPILL_READER_NAME",
    "SpillStore",
    "install_spill_policy",
    "spill_dispatch_log",
    "spill_reader_tool",
]

SPILL_READER_NAME = "read_spill"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class SpillStore:
    """Where spilled content lives: ``<directory>/<id>.json`` (exact blocks) and ``<id>.txt`` (text)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def write(self, call_id: str, content: Sequence[ContentBlock]) -> str:
        """Store ``content`` whole; return its locator (``spill://<id>``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        spill_id = f"{_SAFE.sub('_', call_id)[:64]}-{secrets.token_hex(4)}"
        (self.directory / f"{spill_id}.json").write_text(
            json.dumps(thaw(content), ensure_ascii=False), encoding="utf-8"
        )
        (self.directory / f"{spill_id}.txt").write_text(content_text(content), encoding="utf-8")
        return f"spill://{spill_id}"

    def path_of(self, locator: str) -> Path:
        """The text file behind ``locator``; refuses anything that is not a plain spill id."""
        if not locator.startswith("spill://"):
            raise ValueError(f"not a spill locator: {locator!r} (expected spill://<id>)")
        spill_id = locator.removeprefix("spill://")
        if not spill_id or _SAFE.search(spill_id) or spill_id.startswith("."):
            raise ValueError(f"not a spill locator: {locator!r}")
        return self.directory / f"{spill_id}.txt"

    def read(self, locator: str, offset: int = 0, limit: int = 20_000) -> str:
        """``limit`` characters of the spilled text from ``offset``."""
        path = self.path_of(locator)
        if not path.exists():
            raise FileNotFoundError(f"no spilled output {locator}")
        return path.read_text(encoding="utf-8")[offset : offset + limit]

    def full_content(self, locator: str) -> list[dict[str, Any]]:
        """The exact content blocks that were spilled."""
        path = self.path_of(locator).with_suffix(".json")
        blocks: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
        return blocks


def preview(content: Sequence[ContentBlock], locator: str, preview_chars: int) -> list[dict[str, Any]]:
    """The model-facing replacement for spilled content."""
    text = content_text(content)
    head = text[:preview_chars]
    note = (
        f"[output truncated: {len(text):,} characters in total. The full output is saved as {locator}. "
        f'Read more with {SPILL_READER_NAME}({{"locator": "{locator}", "offset": {len(head)}}}).]'
    )
    return [{"type": "text", "text": f"{head}\n…\n{note}"}]


def _too_big(content: Sequence[ContentBlock], max_chars: int) -> bool:
    return len(content_text(content)) > max_chars


def install_spill_policy(
    target: ToolRuntime | Scope,
    store: SpillStore,
    *,
    max_chars: int = 20_000,
    preview_chars: int = 2_000,
    exempt: Sequence[str] = (SPILL_READER_NAME,),
) -> Disposer:
    """Spill oversized final content of every call (outermost ``tools/post-execute`` listener)."""
    if max_chars < 1 or preview_chars < 0 or preview_chars > max_chars:
        raise ValueError("need max_chars >= 1 and 0 <= preview_chars <= max_chars")
    exempt_names = frozenset(exempt)

    async def spill(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        decision = await next()
        if execution.name in exempt_names or not isinstance(decision, Accept) or decision.value is not UNSET:
            return decision
        content = result.content if decision.content is UNSET else decision.content
        if not _too_big(content, max_chars):
            return decision
        locator = store.write(execution.call_id, content)
        return Accept(
            content=preview(content, locator, preview_chars), additional_contexts=decision.additional_contexts
        )

    return target.on("tools/post-execute", spill, prepend=True)


def spill_dispatch_log(
    store: SpillStore, *, max_chars: int = 20_000, preview_chars: int = 2_000
) -> Callable[..., Any]:
    """A ``tools/code-dispatch-log`` listener that bounds the durable copy of each Code Mode sub-call."""

    async def listener(entry: Any, next: Callable[[], Awaitable[Any]]) -> Any:
        content = await next()
        if not _too_big(content, max_chars):
            return content
        sub_call_id = (
            entry.get("sub_call_id") if isinstance(entry, dict) else getattr(entry, "sub_call_id", "sub")
        )
        locator = store.write(str(sub_call_id), content)
        return preview(content, locator, preview_chars)

    return listener


def spill_reader_tool(store: SpillStore) -> ToolDefinition:
    """The ``read_spill`` tool the preview points the model to."""

    def read(args: Any, ctx: Any) -> str:
        return store.read(args["locator"], int(args.get("offset", 0)), int(args.get("limit", 20_000)))

    return define_tool(
        name=SPILL_READER_NAME,
        description="Read part of a tool output that was too large to show whole (a spill:// locator).",
        parameters={
            "locator": {"type": "string", "required": True, "description": "The spill:// locator."},
            "offset": {"type": "integer", "description": "Character offset to start at (default 0)."},
            "limit": {"type": "integer", "description": "How many characters to read (default 20000)."},
        },
        output={"schema": {"type": "string"}},
        execute=read,
        is_concurrency_safe=lambda args: True,
    )
