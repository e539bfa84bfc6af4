"""Listeners: waterfalls and observers (contract §1.3 Events, §2.8 E6/E13/E19/E24, R3).

Waterfall listeners run outermost-first, each receiving ``next``; ``prepend=True`` puts a listener
first; lists are snapshotted at dispatch; ``tools/result`` observers are contained and logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from helpers import string_tool, text, trace_phases
from toolrt import Accept, Allow, Deny, ToolRuntime, user_message
from toolrt.lowlevel import ToolExecution, ToolsChange

OBSERVER_FAILED = 'tool "{}" ({}): tools/result observer failed: {}'


def make_runtime(log: list[str] | None = None) -> ToolRuntime:
    async def execute(args: Any, ctx: Any) -> str:
        if log is not None:
            log.append("body")
        return "ran"

    runtime = ToolRuntime()
    runtime.register(string_tool("t", execute))
    return runtime


async def settle(caplog: pytest.LogCaptureFixture, count: int) -> None:
    """Let background observer tasks finish (async observer failures are logged when they settle)."""
    for _ in range(50):
        if len([record for record in caplog.records if record.name == "toolrt"]) >= count:
            return
        await asyncio.sleep(0.01)


# --- waterfalls ------------------------------------------------------------------------------------


async def test_waterfall_runs_outermost_first_with_prepend_putting_a_listener_first() -> None:
    """§1.3: ordered by registration; ``prepend=True`` puts a listener first; before/after nest."""
    log: list[str] = []
    runtime = make_runtime(log)

    def listener(label: str) -> Any:
        async def wrap(execution: ToolExecution, next: Any) -> Any:
            log.append(f"{label}:before")
            decision = await next()
            log.append(f"{label}:after")
            return decision

        return wrap

    runtime.on("tools/pre-execute", listener("a"))
    runtime.on("tools/pre-execute", listener("b"))
    runtime.on("tools/pre-execute", listener("first"), prepend=True)
    runtime.on("tools/pre-execute", listener("c"))
    runtime.on("tools/pre-execute", listener("very-first"), prepend=True)

    assert (await runtime.call("t")).value == "ran"
    assert log == [
        "very-first:before",
        "first:before",
        "a:before",
        "b:before",
        "c:before",
        "c:after",
        "b:after",
        "a:after",
        "first:after",
        "very-first:after",
        "body",
    ]


async def test_runs_pre_execute_around_dispatch_and_post_execute_in_order() -> None:
    """runs tools/execute after an allowed pre-execute, around dispatch, and before post-execute."""
    log: list[str] = []
    runtime = make_runtime(log)

    trace_phases(runtime, log)
    runtime.on("tools/result", lambda execution, result: log.append("result"))

    await runtime.call("t")
    assert log == ["pre", "execute:before", "body", "execute:after", "post", "result"]


def noting(log: list[str], label: str, then: Callable[[Any], Any] = lambda next: next()) -> Any:
    """A synchronous pre-execute listener that appends ``label`` to ``log`` and returns ``then(next)``."""

    def listener(execution: ToolExecution, next: Any) -> Any:
        log.append(label)
        return then(next)

    return listener


async def test_a_listener_that_does_not_call_next_short_circuits_the_rest() -> None:
    """§1.3: a listener that does not call ``next()`` skips the rest, including the built-in stage."""
    log: list[str] = []
    runtime = make_runtime(log)

    runtime.on("tools/pre-execute", noting(log, "outer"))
    runtime.on("tools/pre-execute", noting(log, "blocker", lambda next: Deny("short-circuited")))
    runtime.on("tools/pre-execute", noting(log, "inner"))

    result = await runtime.call("t")
    assert result.error.message == "short-circuited"
    assert log == ["outer", "blocker"]


async def test_a_listener_can_post_process_the_value_next_returns() -> None:
    """§1.3 / PO5: a listener may transform what ``next()`` returns (here: a denial reworded, and a
    post-execute accept extended with its own context)."""
    runtime = make_runtime()

    async def reword(execution: ToolExecution, next: Any) -> Any:
        decision = await next()
        return Deny(f"outer saw: {decision!r}")

    runtime.on("tools/pre-execute", reword)
    runtime.on("tools/pre-execute", lambda execution, next: Deny("inner reason"))
    assert (await runtime.call("t")).error.message == "outer saw: Deny(reason='inner reason')"

    runtime = make_runtime()
    decisions: list[Any] = []

    async def add_context(execution: ToolExecution, result: Any, next: Any) -> Any:
        decision = await next()
        decisions.append(decision)
        return Accept(additional_contexts=[user_message("post-1", "from post", plugin="test")])

    runtime.on("tools/post-execute", add_context)
    result = await runtime.call("t")

    assert decisions == [Accept()]
    assert result.value == "ran"
    assert result.content == text("ran")
    assert list(result.additional_contexts) == [
        {
            "id": "post-1",
            "role": "user",
            "content": text("from post"),
            "source": {"kind": "plugin", "plugin": "test"},
        }
    ]


async def test_an_around_wrapper_can_replace_the_result_next_returns() -> None:
    """E13/E15: a ``tools/execute`` wrapper post-processes ``next()``'s result (failures kept as-is)."""
    runtime = make_runtime()

    async def wrapper(execution: ToolExecution, next: Any) -> Any:
        result = await next()
        assert result.value == "ran"
        return type(result)(value="ran and wrapped", content=text("ignored"))

    runtime.on("tools/execute", wrapper)
    result = await runtime.call("t")
    assert result.value == "ran and wrapped"
    assert result.content == text("ran and wrapped")  # re-rendered from the value


async def test_sync_and_async_listeners_mix_in_one_chain() -> None:
    """Decision 0001: listeners may be sync or async; a sync listener may return ``next()``."""
    log: list[str] = []
    runtime = make_runtime(log)

    async def async_delegate(execution: ToolExecution, next: Any) -> Any:
        log.append("async")
        await asyncio.sleep(0)
        return await next()

    runtime.on("tools/pre-execute", noting(log, "sync"))
    runtime.on("tools/pre-execute", async_delegate)
    runtime.on("tools/pre-execute", noting(log, "sync-allow", lambda next: Allow()))
    runtime.on("tools/post-execute", lambda execution, result, next: next())
    runtime.on("tools/execute", lambda execution, next: next())

    assert (await runtime.call("t")).value == "ran"
    assert log == ["sync", "async", "sync-allow", "body"]


async def test_listener_lists_are_snapshotted_at_dispatch() -> None:
    """§1.3: a listener added during dispatch runs from the next dispatch on."""
    log: list[str] = []
    runtime = make_runtime()

    def late(execution: ToolExecution, next: Any) -> Any:
        log.append(f"late:{execution.call_id}")
        return next()

    def adder(execution: ToolExecution, next: Any) -> Any:
        log.append(f"adder:{execution.call_id}")
        if execution.call_id == "c1":
            runtime.on("tools/pre-execute", late)
            runtime.on("tools/pre-execute", late, prepend=True)
        return next()

    runtime.on("tools/pre-execute", adder)
    late_observer_calls: list[str] = []

    def observer_adder(execution: ToolExecution, result: Any) -> None:
        if execution.call_id == "c1":
            runtime.on("tools/result", lambda e, r: late_observer_calls.append(e.call_id))

    runtime.on("tools/result", observer_adder)

    await runtime.call("t", call_id="c1")
    assert log == ["adder:c1"]
    assert late_observer_calls == []

    await runtime.call("t", call_id="c2")
    assert log == ["adder:c1", "late:c2", "adder:c2", "late:c2"]
    assert late_observer_calls == ["c2"]


async def test_a_removed_listener_stops_receiving_and_removal_is_idempotent() -> None:
    """§1.3: ``on`` returns a disposer (callable, context manager, idempotent)."""
    seen: list[str] = []
    runtime = make_runtime()
    remove = runtime.on("tools/result", lambda execution, result: seen.append(execution.call_id))

    await runtime.call("t", call_id="c1")
    remove()
    remove()
    await runtime.call("t", call_id="c2")
    with runtime.on("tools/result", lambda execution, result: seen.append(f"with:{execution.call_id}")):
        await runtime.call("t", call_id="c3")
    await runtime.call("t", call_id="c4")

    assert seen == ["c1", "with:c3"]


# --- observers -------------------------------------------------------------------------------------


async def test_a_sync_observer_failure_is_contained_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """E24: a raising ``tools/result`` observer is logged and the others still run."""
    caplog.set_level(logging.WARNING, logger="toolrt")
    runtime = make_runtime()
    seen: list[Any] = []

    def broken(execution: ToolExecution, result: Any) -> None:
        raise ValueError("observer exploded")

    runtime.on("tools/result", broken)
    runtime.on("tools/result", lambda execution, result: seen.append(result))

    result = await runtime.call("t", call_id="c1")

    assert result.value == "ran"
    assert seen == [result]
    records = [record for record in caplog.records if record.name == "toolrt"]
    assert [record.getMessage() for record in records] == [
        OBSERVER_FAILED.format("t", "c1", "observer exploded")
    ]
    assert records[0].levelno == logging.WARNING


async def test_an_async_observer_failure_is_contained_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """E24: a rejecting async ``tools/result`` observer is logged, never propagated."""
    caplog.set_level(logging.WARNING, logger="toolrt")
    runtime = make_runtime()
    seen: list[str] = []

    async def broken(execution: ToolExecution, result: Any) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("async observer exploded")

    async def fine(execution: ToolExecution, result: Any) -> None:
        seen.append(execution.call_id)

    runtime.on("tools/result", broken)
    runtime.on("tools/result", fine)

    result = await runtime.call("t", call_id="c2")
    await settle(caplog, 1)
    await asyncio.sleep(0.01)

    assert result.value == "ran"
    assert seen == ["c2"]
    messages = [record.getMessage() for record in caplog.records if record.name == "toolrt"]
    assert messages == [OBSERVER_FAILED.format("t", "c2", "async observer exploded")]


async def test_an_observer_failure_message_falls_back_to_the_exception_class_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Decision 0001 (raised values): an empty message reads as the exception class name."""
    caplog.set_level(logging.WARNING, logger="toolrt")
    runtime = make_runtime()

    class QuietError(Exception):
        pass

    def broken(execution: ToolExecution, result: Any) -> None:
        raise QuietError

    runtime.on("tools/result", broken)
    await runtime.call("t", call_id="c3")

    messages = [record.getMessage() for record in caplog.records if record.name == "toolrt"]
    assert messages == [OBSERVER_FAILED.format("t", "c3", "QuietError")]


async def test_an_unprintable_observer_failure_is_still_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Decision 0001 (raised values): ``__str__`` itself raising reads ``<unprintable thrown value>``."""
    caplog.set_level(logging.WARNING, logger="toolrt")
    runtime = make_runtime()

    class HostileError(Exception):
        def __str__(self) -> str:
            raise RuntimeError("cannot print me")

    def broken(execution: ToolExecution, result: Any) -> None:
        raise HostileError

    runtime.on("tools/result", broken)
    result = await runtime.call("t", call_id="c4")

    assert result.value == "ran"
    messages = [record.getMessage() for record in caplog.records if record.name == "toolrt"]
    assert messages == [OBSERVER_FAILED.format("t", "c4", "<unprintable thrown value>")]


async def test_the_same_callback_registered_twice_is_two_independent_listeners() -> None:
    """§1.3: each ``on`` is its own registration; removing one leaves the other."""
    runtime = make_runtime()
    seen: list[str] = []

    def observer(execution: ToolExecution, result: Any) -> None:
        seen.append(execution.call_id)

    remove_first = runtime.on("tools/result", observer)
    runtime.on("tools/result", observer)
    await runtime.call("t", call_id="both")
    remove_first()
    await runtime.call("t", call_id="one")

    assert seen == ["both", "both", "one"]


async def test_observers_see_a_frozen_execution() -> None:
    """E24: the execution is frozen before ``tools/result`` observers run."""
    runtime = make_runtime()
    states: list[bool] = []
    failures: list[str] = []

    def observer(execution: ToolExecution, result: Any) -> None:
        states.append(execution.frozen)
        try:
            execution.defer_context(user_message("late", "too late"))
        except RuntimeError as error:
            failures.append(str(error))

    runtime.on("tools/result", observer)
    result = await runtime.call("t")

    assert states == [True]
    assert failures == ["defer_context() called after the execution finished"]
    assert list(result.additional_contexts) == []


async def test_exactly_one_tools_result_per_call() -> None:
    """E24: exactly one ``tools/result`` per execute call, for success, denial and unknown tools."""
    runtime = make_runtime()
    seen: list[str] = []
    runtime.on("tools/result", lambda execution, result: seen.append(execution.call_id))
    runtime.on(
        "tools/pre-execute",
        lambda execution, next: Deny("no") if execution.call_id == "deny" else next(),
    )

    await runtime.call("t", call_id="ok")
    await runtime.call("t", call_id="deny")
    await runtime.call("missing", call_id="unknown")
    assert seen == ["ok", "deny", "unknown"]


def test_a_tools_change_observer_failure_propagates_to_the_registering_caller() -> None:
    """R3: unlike ``tools/result``, a throwing ``tools/change`` listener fails the registration."""
    runtime = ToolRuntime()
    seen: list[ToolsChange] = []

    def explode(change: ToolsChange) -> None:
        raise RuntimeError("change listener exploded")

    runtime.on("tools/change", explode)
    runtime.on("tools/change", seen.append)
    with pytest.raises(RuntimeError, match="change listener exploded"):
        runtime.reserve("x")
    assert seen == []
    assert runtime.is_admitted("x") is True


# --- event names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tools/pre_execute", "tool/result", "", "tools/RESULT", "approval/request"])
def test_an_unknown_event_name_raises_value_error(name: str) -> None:
    """Python-specific: listening to a name outside the declared events fails loud."""
    runtime = ToolRuntime()
    scope = runtime.scope("a")
    with pytest.raises(ValueError, match="unknown event"):
        runtime.on(name, lambda *args: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown event"):
        scope.on(name, lambda *args: None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name",
    [
        "tools/pre-execute",
        "tools/execute",
        "tools/post-execute",
        "tools/result",
        "tools/change",
        "tools/code-dispatch-log",
    ],
)
def test_every_declared_event_name_is_accepted(name: str) -> None:
    """§1.3: the declared events (including Code Mode's ``tools/code-dispatch-log``) are listenable."""
    runtime = ToolRuntime()
    runtime.on(name, lambda *args: None)()  # type: ignore[arg-type]
    runtime.scope("a").on(name, lambda *args: None)()  # type: ignore[arg-type]


def test_a_listener_must_be_callable() -> None:
    """Python-specific: a non-callable listener is refused at registration."""
    runtime = ToolRuntime()
    with pytest.raises(TypeError, match="must be callable"):
        runtime.on("tools/result", "not callable")  # type: ignore[arg-type]
