"""The interface :class:`ToolExecution` gives the pipeline (issue 11: no module reads another
module's private attributes).

The pipeline's per-call bookkeeping lives on the execution (decision 0005); these tests pin the
operations it performs there and the rules they keep, and that the pipeline uses nothing else.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from helpers import call_input, ctx_message, echo_tool, text
from toolrt import AbortController, AbortSignal, ToolRuntime, ToolSuccess
from toolrt.lowlevel import ToolExecution

SOURCE = Path(__file__).resolve().parents[2] / "src" / "toolrt"


def make_execution(signal: AbortSignal, finalizer: Any = None) -> ToolExecution:
    return ToolExecution("c1", "c1", "echo", {}, None, None, signal, finalizer, None, 7)


# --- bad input first: who may replace the signal, and when ---------------------------------------


def test_a_lent_signal_cannot_be_replaced_until_it_is_returned() -> None:
    caller, lent = AbortSignal(), AbortSignal()
    execution = make_execution(caller)
    execution.open_signal()

    assert execution.lend_signal(lent) is True
    assert execution.signal is lent
    with pytest.raises(AttributeError):
        execution.signal = AbortSignal()

    execution.return_signal(lent, caller, True)
    replacement = AbortSignal()
    execution.signal = replacement
    assert execution.signal is replacement


def test_closing_the_signal_restores_the_caller_and_forbids_replacing_it() -> None:
    caller = AbortSignal()
    execution = make_execution(caller)
    execution.open_signal()
    execution.signal = AbortSignal()

    execution.close_signal()

    assert execution.signal is caller
    with pytest.raises(AttributeError):
        execution.signal = AbortSignal()


def test_a_published_call_keeps_the_signal_it_was_published_with() -> None:
    caller, lent = AbortSignal(), AbortSignal()
    execution = make_execution(caller)
    execution.lend_signal(lent)
    execution.freeze()

    execution.return_signal(lent, caller, True)

    assert execution.frozen
    assert execution.signal is lent
    with pytest.raises(AttributeError):
        execution.signal = AbortSignal()


def test_a_signal_replaced_since_it_was_lent_is_not_overwritten_on_return() -> None:
    caller, lent, later = AbortSignal(), AbortSignal(), AbortSignal()
    execution = make_execution(caller)
    execution.lend_signal(lent)
    execution.lend_signal(later)

    execution.return_signal(lent, caller, False)

    assert execution.signal is later


# --- the bookkeeping operations ------------------------------------------------------------------


def test_the_finalizer_is_taken_once() -> None:
    def finalizer(execution: Any, result: Any) -> None:
        return None

    execution = make_execution(AbortSignal(), finalizer)

    assert execution.take_finalizer() is finalizer
    assert execution.take_finalizer() is None


def test_rebinding_records_the_definition_and_its_generation() -> None:
    execution = make_execution(AbortSignal())
    definition = echo_tool()
    assert execution.resolved_at == 7
    assert execution.definition is None

    execution.rebind(definition, 9)

    assert execution.definition is definition
    assert execution.resolved_at == 9


async def test_listeners_see_the_bookkeeping_of_each_stage(runtime: ToolRuntime) -> None:
    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(ctx_message("deferred"))
        ctx.conclude_turn()
        return "x"

    runtime.register(echo_tool(execute=execute))
    seen: dict[str, Any] = {}
    caller = AbortController().signal

    async def pre(execution: Any, next: Any) -> Any:
        seen["pre"] = (execution.body_invoked, execution.concludes_turn, tuple(execution.deferred_contexts))
        return await next()

    async def wrapper(execution: Any, next: Any) -> Any:
        execution.signal = AbortController().signal
        seen["wrapper"] = execution.caller_signal
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        seen["post"] = (
            execution.body_invoked,
            execution.concludes_turn,
            len(execution.deferred_contexts),
            execution.canonical_result,
            execution.scope_chain,
        )
        return await next()

    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/execute", wrapper)
    runtime.on("tools/post-execute", post)
    runtime.on("tools/result", lambda execution, result: seen.setdefault("result", execution.signal))

    result = await runtime.execute(call_input("echo", signal=caller))

    assert result.content == text("x")
    assert isinstance(result, ToolSuccess)
    assert seen["pre"] == (False, False, ())
    assert seen["wrapper"] is caller
    invoked, concluded, deferred, canonical, chain = seen["post"]
    assert (invoked, concluded, deferred) == (True, True, 1)
    assert isinstance(canonical, ToolSuccess)
    assert canonical.value == "x"
    assert chain is not None
    # The wrappers' turn is over: the published call carries the caller's own signal.
    assert seen["result"] is caller


# --- the house rule --------------------------------------------------------------------------------


def private_reads_of_an_execution(path: Path) -> list[str]:
    """``execution._x`` / ``ctx._x`` attribute accesses in ``path`` (dunders excepted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in {"execution", "ctx", "context"}
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]


def test_no_module_reads_the_private_slots_of_an_execution() -> None:
    found = [
        hit
        for path in sorted(SOURCE.rglob("*.py"))
        if path.name != "_execution.py"
        for hit in private_reads_of_an_execution(path)
    ]
    assert found == []
