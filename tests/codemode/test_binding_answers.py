"""``BindingAnswer``: a future that tells one listener the moment it is settled (runtimes/base.py).

The sandbox host replies to a program's binding call from this listener, one event-loop turn
sooner than a done-callback would run. These tests pin "the moment": inside the resolving call,
before any loop turn, exactly once, whatever settles it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from code_mode_fakes import functions, run_code, setup
from toolrt import tool
from toolrt.codemode._code_runtime import BindingAnswer, CodeRunResult


async def test_the_listener_runs_inside_set_result_before_any_loop_turn() -> None:
    answer = BindingAnswer(loop=asyncio.get_running_loop())
    heard: list[Any] = []
    answer.when_settled(lambda settled: heard.append(settled.result()))
    answer.add_done_callback(lambda settled: heard.append("done-callback"))
    answer.set_result(7)
    assert heard == [7]  # the done-callback waits for a loop turn; the listener did not
    await asyncio.sleep(0)
    assert heard == [7, "done-callback"]
    assert await answer == 7


async def test_an_exception_and_a_cancellation_settle_it_too() -> None:
    loop = asyncio.get_running_loop()
    failed, cancelled = BindingAnswer(loop=loop), BindingAnswer(loop=loop)
    heard: list[str] = []
    failed.when_settled(lambda settled: heard.append(f"failed: {settled.exception()}"))
    cancelled.when_settled(lambda settled: heard.append(f"cancelled: {settled.cancelled()}"))
    failed.set_exception(ValueError("no"))
    assert cancelled.cancel("run over")
    assert not cancelled.cancel("again")  # already cancelled: no second telling
    assert heard == ["failed: no", "cancelled: True"]
    with pytest.raises(ValueError, match="no"):
        await failed


async def test_a_listener_added_after_the_answer_runs_at_once_and_only_once() -> None:
    answer = BindingAnswer(loop=asyncio.get_running_loop())
    answer.set_result("early")
    heard: list[str] = []
    answer.when_settled(lambda settled: heard.append(settled.result()))
    assert heard == ["early"]
    with pytest.raises(asyncio.InvalidStateError):
        answer.set_result("twice")
    assert heard == ["early"]


async def test_a_failing_listener_reaches_the_loop_handler_not_the_resolver() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        answer = BindingAnswer(loop=loop)

        def broken(settled: BindingAnswer) -> None:
            raise RuntimeError("listener broke")

        answer.when_settled(broken)
        answer.set_result(1)  # does not raise
        assert await answer == 1
        assert [str(context["exception"]) for context in reported] == ["listener broke"]
    finally:
        loop.set_exception_handler(None)


async def test_the_code_mode_bridge_answers_a_binding_call_with_one() -> None:
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    bridge = setup("code")
    bridge.runtime.register(tool(add))
    answers: list[Any] = []

    async def behavior(request: Any) -> CodeRunResult:
        answer = functions(request)["add"]({"a": 2, "b": 3})
        assert isinstance(answer, BindingAnswer)
        heard: list[Any] = []
        answer.when_settled(lambda settled: heard.append(settled.result()))
        answers.append(await answer)
        assert heard == [5]
        return CodeRunResult(value="ok")

    bridge.code.behavior = behavior
    result = await run_code(bridge.runtime)
    assert not result.is_error, result
    assert answers == [5]
