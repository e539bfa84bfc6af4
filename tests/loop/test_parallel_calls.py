"""The native scheduler (upstream agent-loop ``tool-calls.spec`` and §2.14 L1–L5)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from code_mode_fakes import FakeRuntime
from helpers import string_tool
from toolrt import (
    AbortController,
    Accept,
    Deny,
    ToolDefinition,
    ToolRuntime,
    user_message,
)
from toolrt.loop._messages import ToolCall
from toolrt.loop._scheduler import CommittedCall, run_tool_calls


class Probe:
    """Records body starts/ends and lets a test hold bodies until released."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.active = 0
        self.peak = 0
        self.gates: dict[str, asyncio.Event] = {}

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    def tool(self, name: str, *, safe: bool | Any = True, hold: bool = False) -> ToolDefinition:
        async def body(args: Any, ctx: Any) -> str:
            key = str(args.get("key", name))
            self.events.append(f"start:{key}")
            self.active += 1
            self.peak = max(self.peak, self.active)
            try:
                if hold:
                    await self.gate(key).wait()
                else:
                    await asyncio.sleep(float(args.get("delay", 0)))
            finally:
                self.active -= 1
            self.events.append(f"end:{key}")
            return f"{name}:{key}"

        classifier = (lambda args: True) if safe is True else (safe if callable(safe) else None)
        return string_tool(name, body, description=name, is_concurrency_safe=classifier)


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    return [ToolCall(id=f"c{index}", name=name, arguments=raw) for index, (name, raw) in enumerate(specs, 1)]


def texts(committed: list[CommittedCall]) -> list[str]:
    return [item.result.content[0]["text"] for item in committed]


async def test_runs_parallel_safe_siblings_concurrently_all_start_before_any_completes() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read", hold=True))
    batch = calls(("read", '{"key":"a"}'), ("read", '{"key":"b"}'), ("read", '{"key":"c"}'))
    task = asyncio.ensure_future(run_tool_calls(runtime, batch, signal=AbortController().signal))
    while probe.events.count("start:a") + probe.events.count("start:b") + probe.events.count("start:c") < 3:
        await asyncio.sleep(0)
    assert probe.events == ["start:a", "start:b", "start:c"]
    for key in "cba":
        probe.gate(key).set()
    committed = await task
    assert texts(committed) == ["read:a", "read:b", "read:c"]
    assert probe.peak == 3


async def test_an_exclusive_call_between_two_parallel_safe_calls_forms_a_barrier() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    runtime.register(probe.tool("write", safe=False))
    batch = calls(
        ("read", '{"key":"r1","delay":0.02}'),
        ("write", '{"key":"w"}'),
        ("read", '{"key":"r2"}'),
    )
    committed = await run_tool_calls(runtime, batch, signal=AbortController().signal)
    assert probe.events == ["start:r1", "end:r1", "start:w", "end:w", "start:r2", "end:r2"]
    assert texts(committed) == ["read:r1", "write:w", "read:r2"]


async def test_commits_results_in_model_order_even_when_a_later_call_settles_first() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    order: list[str] = []
    runtime.on(
        "tools/post-execute", lambda execution, result, next: (order.append(execution.call_id), next())[1]
    )
    batch = calls(("read", '{"key":"slow","delay":0.03}'), ("read", '{"key":"fast"}'))
    recorded: list[str] = []
    committed = await run_tool_calls(
        runtime, batch, signal=AbortController().signal, on_result=lambda item: recorded.append(item.call.id)
    )
    assert probe.events.index("end:fast") < probe.events.index("end:slow")
    assert recorded == ["c1", "c2"] and order == ["c1", "c2"]
    assert texts(committed) == ["read:slow", "read:fast"]


async def test_starts_at_most_the_cap_replenishing_as_calls_settle() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    batch = calls(*[("read", f'{{"key":"k{index}","delay":0.01}}') for index in range(7)])
    committed = await run_tool_calls(runtime, batch, signal=AbortController().signal, max_parallel=3)
    assert probe.peak == 3
    assert len(committed) == 7


async def test_max_parallel_one_is_fully_serial() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    batch = calls(("read", '{"key":"a","delay":0.01}'), ("read", '{"key":"b"}'))
    await run_tool_calls(runtime, batch, signal=AbortController().signal, max_parallel=1)
    assert probe.events == ["start:a", "end:a", "start:b", "end:b"]


async def test_rejects_a_non_positive_parallel_cap() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        await run_tool_calls(ToolRuntime(), [], signal=AbortController().signal, max_parallel=0)


async def test_reclassifies_pending_calls_after_an_exclusive_barrier_replaces_their_tool() -> None:
    runtime, probe = ToolRuntime(), Probe()
    dispose_safe = runtime.register(probe.tool("read"))
    runtime.register(probe.tool("swap", safe=False))

    def swap_on_commit(execution: Any, result: Any) -> None:
        if execution.name == "swap":
            dispose_safe()
            runtime.register(probe.tool("read", safe=False))

    runtime.on("tools/result", swap_on_commit)
    batch = calls(("swap", '{"key":"s"}'), ("read", '{"key":"a","delay":0.01}'), ("read", '{"key":"b"}'))
    await run_tool_calls(runtime, batch, signal=AbortController().signal)
    # After the swap the reads are exclusive: strictly serial.
    assert probe.events == ["start:s", "end:s", "start:a", "end:a", "start:b", "end:b"]


async def test_stops_replenishing_when_a_result_observer_makes_the_next_call_exclusive() -> None:
    runtime, probe = ToolRuntime(), Probe()
    exclusive_now = {"flag": False}
    runtime.register(probe.tool("read", safe=lambda args: not exclusive_now["flag"]))
    runtime.on("tools/result", lambda execution, result: exclusive_now.update(flag=True))
    batch = calls(("read", '{"key":"a"}'), ("read", '{"key":"b","delay":0.01}'), ("read", '{"key":"c"}'))
    await run_tool_calls(runtime, batch, signal=AbortController().signal, max_parallel=1)
    assert probe.events[-2:] == ["start:c", "end:c"]
    assert probe.peak == 1


async def test_pre_and_post_execute_observe_model_call_order() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    seen: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        seen.append(f"pre:{execution.call_id}")
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        seen.append(f"post:{execution.call_id}")
        return await next()

    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/post-execute", post)
    batch = calls(("read", '{"key":"a","delay":0.02}'), ("read", '{"key":"b"}'), ("read", '{"key":"c"}'))
    await run_tool_calls(runtime, batch, signal=AbortController().signal)
    assert seen == ["pre:c1", "pre:c2", "pre:c3", "post:c1", "post:c2", "post:c3"]


async def test_injects_additional_contexts_in_model_call_order_not_settlement_order() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    runtime.on(
        "tools/post-execute",
        lambda execution, result, next: Accept(
            additional_contexts=[user_message(f"ctx-{execution.call_id}", execution.call_id)]
        ),
    )
    batch = calls(("read", '{"key":"a","delay":0.02}'), ("read", '{"key":"b"}'))
    committed = await run_tool_calls(runtime, batch, signal=AbortController().signal)
    assert [item.result.additional_contexts[0]["id"] for item in committed] == ["ctx-c1", "ctx-c2"]


async def test_orders_pre_execute_denials_and_errors_without_dispatching_them() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))

    def pre(execution: Any, next: Any) -> Any:
        if execution.call_id == "c1":
            return Deny("no c1")
        if execution.call_id == "c2":
            raise RuntimeError("policy exploded")
        return next()

    runtime.on("tools/pre-execute", pre)
    batch = calls(("read", '{"key":"a"}'), ("read", '{"key":"b"}'), ("read", '{"key":"c"}'))
    committed = await run_tool_calls(runtime, batch, signal=AbortController().signal)
    assert texts(committed) == ["Error: no c1", "Error: policy exploded", "read:c"]
    assert probe.events == ["start:c", "end:c"]


async def test_malformed_json_is_an_invalid_args_result_never_a_silent_empty_object() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    batch = calls(("read", '{"key": "a",'), ("read", ""), ("nope", "{}"))
    committed = await run_tool_calls(runtime, batch, signal=AbortController().signal)
    first = committed[0].result
    assert first.is_error and first.error.info is not None
    assert first.error.info.code == "INVALID_ARGS"
    assert first.content[0]["text"].startswith("Error: invalid arguments: arguments are not valid JSON: ")
    assert committed[1].result.is_error is False  # empty text means {}
    assert committed[2].result.content[0]["text"] == 'Error: unknown tool "nope"'
    assert probe.events == ["start:read", "end:read"]


async def test_starts_no_calls_when_the_signal_is_already_aborted() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    controller = AbortController()
    controller.abort("stop")
    recorded: list[str] = []
    committed = await run_tool_calls(
        runtime,
        calls(("read", "{}"), ("read", "{}")),
        signal=controller.signal,
        on_call=lambda call, args: recorded.append(call.id),
    )
    assert probe.events == []
    assert recorded == ["c1", "c2"]
    assert texts(committed) == ["Error: tool call aborted before dispatch"] * 2
    assert all(item.result.error.info.code == "ABORTED_BEFORE_DISPATCH" for item in committed)  # type: ignore[union-attr]


async def test_skips_dispatch_and_stops_starting_siblings_when_abort_fires_during_pre_execute() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    controller = AbortController()

    async def pre(execution: Any, next: Any) -> Any:
        if execution.call_id == "c1":
            controller.abort("user stop")
        return await next()

    runtime.on("tools/pre-execute", pre)
    committed = await run_tool_calls(
        runtime, calls(("read", "{}"), ("read", "{}"), ("read", "{}")), signal=controller.signal
    )
    assert probe.events == []
    assert [item.result.error.info.code for item in committed] == ["ABORTED_BEFORE_DISPATCH"] * 3  # type: ignore[union-attr]


async def test_stops_replenishing_after_abort_commits_started_results_and_keeps_contexts() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read", hold=True))
    runtime.on(
        "tools/post-execute",
        lambda execution, result, next: Accept(
            additional_contexts=[user_message(f"x-{execution.call_id}", "x")]
        ),
    )
    controller = AbortController()
    batch = calls(*[("read", f'{{"key":"k{index}"}}') for index in range(4)])
    task = asyncio.ensure_future(run_tool_calls(runtime, batch, signal=controller.signal, max_parallel=2))
    while probe.events.count("start:k0") + probe.events.count("start:k1") < 2:
        await asyncio.sleep(0)
    controller.abort("stop")
    probe.gate("k0").set()
    probe.gate("k1").set()
    committed = await task
    assert probe.events.count("start:k2") == 0 and probe.events.count("start:k3") == 0
    codes = [item.result.error.info.code for item in committed]  # type: ignore[union-attr]
    assert codes == ["ABORTED", "ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert [item.result.additional_contexts[0]["id"] for item in committed[:2]] == ["x-c1", "x-c2"]


async def test_does_not_run_an_exclusive_barrier_after_a_parallel_group_aborts() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read", hold=True))
    runtime.register(probe.tool("write", safe=False))
    controller = AbortController()
    task = asyncio.ensure_future(
        run_tool_calls(
            runtime, calls(("read", '{"key":"r"}'), ("write", '{"key":"w"}')), signal=controller.signal
        )
    )
    while "start:r" not in probe.events:
        await asyncio.sleep(0)
    controller.abort("stop")
    probe.gate("r").set()
    committed = await task
    assert "start:w" not in probe.events
    assert committed[1].result.error.info.code == "ABORTED_BEFORE_DISPATCH"  # type: ignore[union-attr]


async def test_every_call_has_exactly_one_result_when_the_awaiting_task_is_cancelled() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read", hold=True))
    observed: list[str] = []
    runtime.on("tools/result", lambda execution, result: observed.append(execution.call_id))
    recorded: list[CommittedCall] = []
    batch = calls(*[("read", f'{{"key":"k{index}"}}') for index in range(3)])
    task = asyncio.ensure_future(
        run_tool_calls(
            runtime, batch, signal=AbortController().signal, max_parallel=2, on_result=recorded.append
        )
    )
    while probe.events.count("start:k0") + probe.events.count("start:k1") < 2:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [item.call.id for item in recorded] == ["c1", "c2", "c3"]
    assert sorted(observed) == ["c1", "c2", "c3"]
    assert all(item.result.is_error for item in recorded)


async def test_a_call_cancelled_inside_an_async_post_execute_still_gets_its_one_result() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    entered = asyncio.Event()

    async def slow_post(execution: Any, result: Any, next: Any) -> Any:
        entered.set()
        await asyncio.Event().wait()  # never settles: the awaiting task is cancelled here
        return await next()

    runtime.on("tools/post-execute", slow_post)
    observed: list[str] = []
    runtime.on("tools/result", lambda execution, result: observed.append(execution.call_id))
    recorded: list[CommittedCall] = []
    batch = calls(("read", '{"key":"a"}'), ("read", '{"key":"b"}'))
    task = asyncio.ensure_future(
        run_tool_calls(runtime, batch, signal=AbortController().signal, on_result=recorded.append)
    )
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [item.call.id for item in recorded] == ["c1", "c2"]
    assert sorted(observed) == ["c1", "c2"]
    assert [item.result.error.info.code for item in recorded] == ["ABORTED", "ABORTED"]  # type: ignore[union-attr]


async def test_a_denied_call_behind_a_cancelled_async_post_execute_gets_its_result() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read", safe=False))
    runtime.register(probe.tool("write", safe=False))
    entered = asyncio.Event()

    async def slow_post(execution: Any, result: Any, next: Any) -> Any:
        entered.set()
        await asyncio.Event().wait()
        return await next()

    runtime.on("tools/post-execute", slow_post)
    runtime.on(
        "tools/pre-execute",
        lambda execution, next: Deny("no writes") if execution.name == "write" else next(),
    )
    recorded: list[CommittedCall] = []
    batch = calls(("read", '{"key":"a"}'), ("write", '{"key":"w"}'))
    task = asyncio.ensure_future(
        run_tool_calls(runtime, batch, signal=AbortController().signal, on_result=recorded.append)
    )
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [item.call.id for item in recorded] == ["c1", "c2"]
    assert "start:w" not in probe.events


async def test_cancelling_the_awaiting_task_drains_started_bodies_before_cancelled_error_propagates() -> None:
    runtime = ToolRuntime()
    cleaned: list[str] = []
    started = asyncio.Event()

    async def body(args: Any, ctx: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            # A bounded cleanup that itself awaits (flush a file, kill a child process).
            for _ in range(5):
                await asyncio.sleep(0)
            cleaned.append("done")
        return "never"

    runtime.register(string_tool("slow", body, description="slow"))
    recorded: list[CommittedCall] = []
    task = asyncio.ensure_future(
        run_tool_calls(
            runtime, calls(("slow", "{}")), signal=AbortController().signal, on_result=recorded.append
        )
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["done"]
    assert [item.result.error.info.code for item in recorded] == ["ABORTED"]  # type: ignore[union-attr]


async def test_stops_new_dispatches_and_drains_started_bodies_before_surfacing_an_internal_failure() -> None:
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))

    def explode(call: ToolCall, arguments: Any) -> None:
        if call.id == "c2":
            raise RuntimeError("log disk full")

    batch = calls(("read", '{"key":"a","delay":0.02}'), ("read", '{"key":"b"}'), ("read", '{"key":"c"}'))
    with pytest.raises(RuntimeError, match="log disk full"):
        await run_tool_calls(runtime, batch, signal=AbortController().signal, on_call=explode)
    assert probe.events == ["start:a", "end:a"]


async def test_denies_a_model_direct_native_call_under_code_mode_and_the_body_never_runs() -> None:
    runtime, probe = ToolRuntime(mode="code", code_runtime=FakeRuntime()), Probe()
    runtime.register(probe.tool("read"))
    committed = await run_tool_calls(runtime, calls(("read", "{}")), signal=AbortController().signal)
    result = committed[0].result
    assert result.error.info.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]
    assert probe.events == []


async def test_each_call_resolves_its_tool_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Classification, policy, the body and the commit share one resolution per call: the scope's
    view is read once per call and nothing re-resolves while the registry is unchanged."""
    runtime, probe = ToolRuntime(), Probe()
    runtime.register(probe.tool("read"))
    runtime.register(probe.tool("write", safe=False))
    runtime.on("tools/pre-execute", lambda execution, next: next())
    runtime.on("tools/post-execute", lambda execution, result, next: next())
    registry = runtime._registry
    views: list[Any] = []
    resolves: list[Any] = []
    view, resolve = registry.view, registry.resolve_execution
    monkeypatch.setattr(registry, "view", lambda key: views.append(key) or view(key))
    monkeypatch.setattr(registry, "resolve_execution", lambda *args: resolves.append(args) or resolve(*args))

    batch = calls(("read", '{"key":"a"}'), ("write", '{"key":"b"}'), ("read", '{"key":"c"}'))
    committed = await run_tool_calls(runtime, batch, signal=AbortController().signal)

    assert texts(committed) == ["read:a", "write:b", "read:c"]
    assert len(views) == 3
    assert resolves == []
