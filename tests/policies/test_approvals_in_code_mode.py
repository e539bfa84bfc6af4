"""Approvals inside Code Mode with the real sandbox: human time is not program time (issue 12 item 3).

A ``run_code`` program whose sub-call waits for a person must not spend its wall-clock budget on the
wait (reported: a user answered ``y`` after 35 s and the model had already read ``Error: code run
failed (timeout)`` from a 30 s budget). The pipeline pauses the run's ``RunClock`` while the approval
is pending; the sandbox's wall clock counts only running time, and the program, blocked on the reply,
spends no CPU (measured here from ``/proc``, not assumed). The wait has a deadline of its own.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from helpers import descendant_processes, register_tool
from toolrt import Ask, ToolRuntime
from toolrt.codemode import CodeRunLimits
from toolrt.policies import Approvals
from toolrt.sandbox import PythonSandboxRuntime

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads CPU time from /proc")

AGENT = "agent-1"
PROGRAM = "r = await tools.delete({'path': 'a.txt'})\nprint(r)"


def _descendants_cpu_seconds() -> float:
    """utime + stime of every process below this one (the sandbox child and, under bwrap, its own)."""
    tick = os.sysconf("SC_CLK_TCK")
    return sum((int(fields[11]) + int(fields[12])) / tick for fields in descendant_processes().values())


def _runtime(approvals: Approvals, limits: CodeRunLimits) -> tuple[ToolRuntime, PythonSandboxRuntime]:
    code_runtime = PythonSandboxRuntime(pool_size=0, limits=limits)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime, approval=approvals)

    async def delete(args: Any, ctx: Any) -> str:
        return f"deleted {args['path']}"

    register_tool(
        runtime, "delete", "Delete a file.", delete, parameters={"path": {"type": "string", "required": True}}
    )
    runtime.on(
        "tools/pre-execute",
        lambda execution, next: Ask("deleting is irreversible") if execution.name == "delete" else next(),
    )
    return runtime, code_runtime


async def test_a_person_answering_after_the_wall_clock_budget_does_not_time_the_program_out() -> None:
    approvals = Approvals()
    cpu: list[float] = []

    async def slow_person(request: Any, next: Any) -> str:
        cpu.append(_descendants_cpu_seconds())
        await asyncio.sleep(2.0)  # twice the program's whole wall-clock budget
        cpu.append(_descendants_cpu_seconds())
        return "allowed-once"

    approvals.answerer(slow_person)
    runtime, code_runtime = _runtime(approvals, CodeRunLimits(wall_seconds=1, cpu_seconds=1))
    try:
        result = await runtime.call("run_code", {"code": PROGRAM, "description": "Delete"}, agent=AGENT)
        assert not result.is_error, result.content
        assert "deleted a.txt" in result.content[0]["text"]
        # The program was blocked on the reply: its processes spent (almost) no CPU in two seconds.
        assert len(cpu) == 2 and cpu[1] - cpu[0] < 0.2, cpu
    finally:
        runtime.close()
        await code_runtime.aclose()


async def test_the_same_wait_spent_by_a_tool_body_times_the_program_out() -> None:
    # The control: program time that is not a person's still counts, so the pause above is what
    # let the program finish.
    approvals = Approvals()
    approvals.answerer(lambda request, next: "allowed-once")
    runtime, code_runtime = _runtime(approvals, CodeRunLimits(wall_seconds=1))

    async def slow(args: Any, ctx: Any) -> str:
        await asyncio.sleep(2.0)
        return "slept"

    register_tool(runtime, "slow", "Sleep.", slow)
    try:
        result = await runtime.call(
            "run_code", {"code": "print(await tools.slow({}))", "description": "Sleep"}, agent=AGENT
        )
        assert result.is_error
        assert "code run failed (timeout): wall-clock ceiling reached (1s)" in result.content[0]["text"]
    finally:
        runtime.close()
        await code_runtime.aclose()


async def test_an_unanswered_approval_expires_and_the_program_reads_the_denial() -> None:
    approvals = Approvals(wait_timeout_ms=300)
    answered: list[str] = []

    async def absent_person(request: Any, next: Any) -> str:
        await asyncio.Event().wait()  # nobody is at the terminal
        answered.append("never")
        return "allowed-once"

    approvals.answerer(absent_person)
    runtime, code_runtime = _runtime(approvals, CodeRunLimits(wall_seconds=10))
    program = (
        "try:\n"
        "    await tools.delete({'path': 'a.txt'})\n"
        "except ToolCallError as error:\n"
        "    print('denied:', error)\n"
    )
    try:
        result = await runtime.call("run_code", {"code": program, "description": "Delete"}, agent=AGENT)
        assert not result.is_error, result.content
        assert (
            'denied: approval for tool "delete" expired: nobody answered before the approval wait '
            "deadline, so the call was not run" in result.content[0]["text"]
        )
        assert answered == []
    finally:
        runtime.close()
        await code_runtime.aclose()
