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

**On by default.** Every :class:`~toolrt.ToolRuntime` installs :func:`install_output_budget`: each
direct call's model-facing content is bounded by the tool's ``max_output_chars`` or the runtime's
``output_budget`` (20,000 characters unless set; ``UNBOUNDED`` turns it off). Past the budget the
model reads a head-and-tail preview and a locator; the whole content goes to a per-runtime temporary
directory (removed by ``runtime.close()``), and ``read_spill`` is registered the first time it is
needed. ``install_spill_policy`` stays for a store and thresholds of your own (docs/limits.md).

The same store serves Code Mode's ``tools/code-dispatch-log`` hook (:func:`spill_dispatch_log`),
which bounds the durable log copy of each sub-call.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import tempfile
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrt._content import ContentBlock, content_text
from toolrt._decisions import UNSET, Accept, PostToolDecision
from toolrt._events import Disposer
from toolrt._execution import ToolExecution
from toolrt._json import thaw
from toolrt._results import ToolExecutionResult
from toolrt._tool_builder import define_tool
from toolrt._tool_definition import DEFAULT_OUTPUT_BUDGET, UNBOUNDED, ToolDefinition

if TYPE_CHECKING:
    from toolrt._tool_runtime import Scope, ToolRuntime

__all__ = [
    "SPILL_READER_NAME",
    "SpillStore",
    "bounded_preview",
    "install_output_budget",
    "install_spill_policy",
    "spill_dispatch_log",
    "spill_reader_tool",
]

SPILL_READER_NAME = "read_spill"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")

# Where an explicit spill policy is installed: runtime -> scope keys (None for the whole runtime).
# The default budget stands aside for the calls one covers, so the two never spill the same result
# twice (a preview of a preview) whatever order they were installed in.
_explicit: weakref.WeakKeyDictionary[ToolRuntime, Counter[Hashable | None]] = weakref.WeakKeyDictionary()


def _covered_by_explicit_policy(runtime: ToolRuntime, agent: Hashable | None) -> bool:
    keys = _explicit.get(runtime)
    if not keys:
        return False
    return None in keys or any(key in keys for key in runtime.scope_chain(agent))


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
        # newline="": a spilled "\r\n" reads back as written. Reading only up to the window's end
        # keeps a page near the start of a large spill cheap.
        with path.open(encoding="utf-8", newline="") as file:
            if offset < 0 or limit < 0:
                return file.read()[offset : offset + limit]
            return file.read(offset + limit)[offset:]

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


def bounded_preview(content: Sequence[ContentBlock], locator: str, budget: int) -> list[dict[str, Any]]:
    """The model-facing replacement for content over ``budget``: its head, its tail and a locator.

    The head is 40% of the budget and the tail 10%, so the preview and its note stay well inside the
    budget, and the model sees both how the output starts and how it ends (a summary, an error).
    """
    text = content_text(content)
    head = text[: budget * 2 // 5]
    tail_chars = budget // 10
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    omitted = len(text) - len(head) - len(tail)
    note = (
        f"[output truncated: {len(text):,} characters in total, over the budget of {budget:,}; "
        f"shown: the first {len(head):,} and the last {len(tail):,}. The full output is saved as {locator}. "
        f'Read the rest with {SPILL_READER_NAME}({{"locator": "{locator}", "offset": {len(head)}}}).]'
    )
    return [{"type": "text", "text": f"{head}\n[… {omitted:,} characters omitted …]\n{tail}\n{note}"}]


def install_output_budget(runtime: ToolRuntime) -> Disposer:
    """Bound every direct call's model-facing content by its tool's budget (installed by default).

    The budget is the definition's ``max_output_chars``, else ``runtime.output_budget``; ``UNBOUNDED``
    lets a result through whole. A Code Mode sub-call is left alone: its content never reaches the
    model (the program gets the canonical value, and ``run_code``'s own result is bounded). The
    store is a temporary directory made at the first spill; ``read_spill`` (reading at most
    ``DEFAULT_OUTPUT_BUDGET`` characters a call, or the runtime's budget) is registered with it
    unless a tool of that name exists. Disposing (or ``runtime.close()``) deletes the directory.
    """
    store: SpillStore | None = None
    page = runtime.output_budget if isinstance(runtime.output_budget, int) else DEFAULT_OUTPUT_BUDGET

    def store_for_spill() -> SpillStore:
        nonlocal store
        if store is None:
            store = SpillStore(tempfile.mkdtemp(prefix="toolrt-spill-"))
            if SPILL_READER_NAME not in runtime.known_tool_names():
                runtime.register(spill_reader_tool(store, max_limit=page))
        return store

    async def bound(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        decision = await next()
        if (
            execution.parent is not None
            or execution.name == SPILL_READER_NAME
            or _covered_by_explicit_policy(runtime, execution.agent)
            or not isinstance(decision, Accept)
            or decision.value is not UNSET
        ):
            return decision
        definition = execution.definition  # resolved once when the call was created
        own = definition.max_output_chars if definition is not None else None
        budget = runtime.output_budget if own is None else own
        if budget is UNBOUNDED or not isinstance(budget, int):
            return decision
        content = _blocks(result.content if decision.content is UNSET else decision.content)
        if not _too_big(content, budget):
            return decision
        locator = store_for_spill().write(execution.call_id, content)
        return Accept(
            content=bounded_preview(content, locator, budget),
            additional_contexts=decision.additional_contexts,
        )

    listening = runtime.on("tools/post-execute", bound, prepend=True)

    def remove_store() -> None:
        listening()
        if store is not None:
            shutil.rmtree(store.directory, ignore_errors=True)

    return Disposer(remove_store, runtime)


def _blocks(content: Any) -> Sequence[ContentBlock]:
    # A listener may replace content with a bare string (the pipeline normalizes it later).
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


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
    """Spill oversized final content of every call (outermost ``tools/post-execute`` listener).

    For the calls it covers (the runtime's, or a scope's and its descendants'), this policy takes over
    from the default output budget: its thresholds and its store apply, the default's do not.
    """
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
        content = _blocks(result.content if decision.content is UNSET else decision.content)
        if not _too_big(content, max_chars):
            return decision
        locator = store.write(execution.call_id, content)
        return Accept(
            content=preview(content, locator, preview_chars), additional_contexts=decision.additional_contexts
        )

    from toolrt._tool_runtime import Scope

    runtime, key = (target.runtime, target.key) if isinstance(target, Scope) else (target, None)
    keys = _explicit.setdefault(runtime, Counter())
    keys[key] += 1
    listening = target.on("tools/post-execute", spill, prepend=True)

    def dispose() -> None:
        listening()
        keys[key] -= 1
        if keys[key] <= 0:
            del keys[key]

    return Disposer(dispose, target)


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


def spill_reader_tool(store: SpillStore, *, max_limit: int = 20_000) -> ToolDefinition:
    """The ``read_spill`` tool the preview points the model to; one read returns at most ``max_limit``
    characters (a larger ``limit`` is lowered to it, so reading back is bounded too)."""

    def read(args: Any, ctx: Any) -> str:
        offset = max(0, int(args.get("offset", 0)))
        limit = min(max(0, int(args.get("limit", max_limit))), max_limit)
        return store.read(args["locator"], offset, limit)

    return define_tool(
        name=SPILL_READER_NAME,
        description="Read part of a tool output that was too large to show whole (a spill:// locator).",
        parameters={
            "locator": {"type": "string", "required": True, "description": "The spill:// locator."},
            "offset": {"type": "integer", "description": "Character offset to start at (default 0)."},
            "limit": {
                "type": "integer",
                "description": f"How many characters to read (default and maximum {max_limit}).",
            },
        },
        output={"schema": {"type": "string"}},
        execute=read,
        is_concurrency_safe=lambda args: True,
    )
