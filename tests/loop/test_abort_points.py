"""Random abort points: a signal abort and ``task.cancel()`` keep the same promise (issue 12).

Whatever moment the turn is stopped at — before the model answers, inside a pre-execute listener,
a body, its cleanup, an async post-execute listener, a Code Mode program and its sub-calls — every
call ends with exactly one result (in the log, in ``tools/result`` and in the conversation), no task
is left running, no file descriptor leaks, nothing is logged after ``turn/end``, and the next turn
runs on a conversation the OpenAI adapter accepts. A short run is part of the normal suite; the long
one is ``-m slow``.

The Code Mode cases run twice: on a fake code runtime (abort points counted in event-loop ticks), and
on the real sandbox (``PythonSandboxRuntime``: a child process runs the program and its sub-calls
cross a pipe; abort points are moments in time, from before the child has started to after its
sub-calls have been answered). There, in addition, no child process is left once the turn returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from code_mode_fakes import FakeRuntime
from helpers import descendant_processes, string_tool
from toolrt import AbortController, Deny, ToolRuntime
from toolrt.codemode import CodeRunRequest
from toolrt.loop._agent import Agent
from toolrt.loop._messages import AssistantMessage, ToolCall
from toolrt.loop._openai_format import to_openai_messages
from toolrt.loop._scripted_model import ScriptedModel

KINDS = ("fast", "hang", "post", "deny")


def _runtime(code_mode: bool, code_runtime: Any = None) -> tuple[ToolRuntime, FakeRuntime, list[str]]:
    fake = FakeRuntime()
    if code_runtime is not None:
        runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    else:
        runtime = ToolRuntime(mode="code", code_runtime=fake) if code_mode else ToolRuntime()
    observed: list[str] = []

    async def body(args: Any, ctx: Any) -> str:
        if args.get("kind") == "hang":
            try:
                await ctx.signal.wait()
            finally:
                for _ in range(3):  # a cleanup that itself awaits
                    await asyncio.sleep(0)
        else:
            await asyncio.sleep(0)
        return "ok"

    runtime.register(string_tool("t", body, description="t", is_concurrency_safe=lambda args: True))

    async def post(execution: Any, result: Any, next: Any) -> Any:
        if execution.arguments.get("kind") == "post":
            for _ in range(3):
                await asyncio.sleep(0)
        return await next()

    runtime.on("tools/post-execute", post)
    runtime.on(
        "tools/pre-execute",
        lambda execution, next: Deny("no") if execution.arguments.get("kind") == "deny" else next(),
    )
    runtime.on("tools/result", lambda execution, result: observed.append(execution.call_id))
    return runtime, fake, observed


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _sandbox_program(kinds: list[str]) -> str:
    calls = ", ".join(f"tools.t({{'kind': {kind!r}}})" for kind in kinds)
    return f"done = await asyncio.gather({calls}, return_exceptions=True)\nprint(len(done))"


async def _scenario(
    kinds: list[str], ticks: int, cancel: bool, code_mode: bool, sandbox_delay: float | None = None
) -> None:
    code_runtime: Any = None
    if sandbox_delay is not None:
        from toolrt.sandbox import PythonSandboxRuntime

        code_runtime = PythonSandboxRuntime(pool_size=0)
        code_mode = True
    runtime, fake, observed = _runtime(code_mode, code_runtime)
    if code_runtime is not None:
        arguments = json.dumps({"code": _sandbox_program(kinds), "description": "d"})
        tool_calls: tuple[ToolCall, ...] = (ToolCall("r1", "run_code", arguments),)
    elif code_mode:

        async def program(request: Any) -> Any:
            functions = request.bindings[0].functions
            await asyncio.gather(*(functions["t"]({"kind": kind}) for kind in kinds), return_exceptions=True)

        fake.behavior = program
        tool_calls = (ToolCall("r1", "run_code", '{"code":"p","description":"d"}'),)
    else:
        tool_calls = tuple(
            ToolCall(f"c{index}", "t", f'{{"kind":"{kind}"}}') for index, kind in enumerate(kinds)
        )
    model = ScriptedModel([AssistantMessage(tool_calls=tool_calls), "after", "next", "next"])
    agent = Agent(runtime, model)
    controller = AbortController()
    task = asyncio.ensure_future(agent.run_turn("go", signal=controller.signal))
    if sandbox_delay is not None:
        # Signal aborts and task.cancel() alike, from before the child has started (its cold start)
        # to after the answers.
        await asyncio.sleep(sandbox_delay)
    else:
        for _ in range(ticks):
            await asyncio.sleep(0)
    if cancel:
        task.cancel()
    else:
        controller.abort("stop")
    with contextlib.suppress(asyncio.CancelledError):
        await task
    # Checked the moment the turn returns or raises: every body and bridge has already drained, and
    # the sandbox's processes are gone.
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    assert left == [], left
    if code_runtime is not None:
        assert sorted(descendant_processes()) == []
    types = [event.type for event in agent.session.events()]
    assert types[-1] == "turn/end"
    for _ in range(10):
        await asyncio.sleep(0)
    assert [event.type for event in agent.session.events()] == types  # nothing after turn/end
    calls = Counter(e.data["call_id"] for e in agent.session.events() if e.type == "tool/call")
    results = Counter(e.data["call_id"] for e in agent.session.events() if e.type == "tool/result")
    assert calls == results
    assert set(results.values()) <= {1}
    native = Counter(call_id for call_id in observed if ":code:" not in call_id)
    assert native == results
    if code_mode:
        starts = Counter(
            e.data["sub_call_id"] for e in agent.session.events() if e.type == "tool/code-dispatch-start"
        )
        settled = Counter(
            e.data["sub_call_id"] for e in agent.session.events() if e.type == "tool/code-dispatch"
        )
        assert starts == settled
    to_openai_messages("", agent.messages)  # raises ConversationError on a dangling call
    again = await agent.run_turn("again")
    assert again.reason == "stop"
    agent.close()
    if code_runtime is not None:
        await code_runtime.aclose()


abort_points = {
    "kinds": st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
    "ticks": st.integers(1, 40),  # 0: cancelled before run_turn starts, nothing to check,
    "cancel": st.booleans(),
    "code_mode": st.booleans(),
}


def _check(
    kinds: list[str], ticks: int, cancel: bool, code_mode: bool, sandbox_delay: float | None = None
) -> None:
    before = _fd_count()
    asyncio.run(_scenario(kinds, ticks, cancel, code_mode, sandbox_delay))
    assert _fd_count() == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**abort_points)
def test_every_call_gets_one_result_at_any_abort_point(
    kinds: list[str], ticks: int, cancel: bool, code_mode: bool
) -> None:
    _check(kinds, ticks, cancel, code_mode)


@pytest.mark.slow
@settings(max_examples=1_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**abort_points)
def test_every_call_gets_one_result_at_any_abort_point_long_run(
    kinds: list[str], ticks: int, cancel: bool, code_mode: bool
) -> None:
    _check(kinds, ticks, cancel, code_mode)


sandbox_abort_points = {
    "kinds": st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
    # From before the child has started (a cold start takes a few hundred ms) to after the answers.
    "delay": st.floats(0.0, 1.2),
    "cancel": st.booleans(),
}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**sandbox_abort_points)
def test_a_sandboxed_program_gets_one_result_per_call_at_any_abort_point(
    kinds: list[str], delay: float, cancel: bool
) -> None:
    _check(kinds, 0, cancel, True, sandbox_delay=delay)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**sandbox_abort_points)
def test_a_sandboxed_program_gets_one_result_per_call_at_any_abort_point_long_run(
    kinds: list[str], delay: float, cancel: bool
) -> None:
    _check(kinds, 0, cancel, True, sandbox_delay=delay)


def test_cancelling_a_run_during_its_cold_start_leaves_nothing_running() -> None:
    from toolrt.sandbox import PythonSandboxRuntime

    async def scenario() -> None:
        code_runtime = PythonSandboxRuntime(pool_size=0)
        await code_runtime.run(CodeRunRequest(program="print(1)", bindings=[]))  # probed, warm caches
        run = asyncio.ensure_future(code_runtime.run(CodeRunRequest(program="print(1)", bindings=[])))
        await asyncio.sleep(0.01)  # the child is being spawned
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        await code_runtime.aclose()
        assert left == [], left

    asyncio.run(scenario())
