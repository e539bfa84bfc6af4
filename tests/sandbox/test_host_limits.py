"""The sandbox host's own bounds (issue 12): what a run may cost the host in memory, what a bad
request gets back, and that only encodable text leaves a run. Real children throughout."""

from __future__ import annotations

import asyncio
import os
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import pytest
from machine import confined_backends

from toolrt._abort import AbortController
from toolrt.codemode._code_runtime import (
    NO_VALUE,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
    RunClock,
)
from toolrt.sandbox import PythonSandboxRuntime
from toolrt.sandbox._host.run import LOG_ENTRIES_KEPT

BACKENDS = confined_backends() or ["unconfined"]
ERROR_CLASS = CodeErrorClass("ToolCallError", "toolName")


async def echo(args: Any) -> Any:
    return {"echo": args}


async def surrogate(args: Any) -> Any:
    return {"text": "bad \udc80"}


def tools(noun: str | None = None) -> list[CodeBindingNamespace]:
    functions = {"echo": echo, "send_mail": echo, "surrogate": surrogate}
    return [CodeBindingNamespace("tools", functions, ERROR_CLASS, member_noun=noun)]


@pytest.fixture(params=BACKENDS)
async def runtime(request: pytest.FixtureRequest) -> AsyncIterator[PythonSandboxRuntime]:
    rt = PythonSandboxRuntime(
        backend=request.param, pool_size=0, allow_unconfined=request.param == "unconfined"
    )
    yield rt
    await rt.aclose()


async def run(
    rt: PythonSandboxRuntime, program: str, bindings: list[CodeBindingNamespace] | None = None, **limits: Any
) -> CodeRunResult:
    request = CodeRunRequest(
        textwrap.dedent(program),
        tools() if bindings is None else bindings,
        limits=CodeRunLimits(**limits) if limits else None,
    )
    return await asyncio.wait_for(rt.run(request), 60)


# --- a bad request is a result (item 7) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"program": b"return 1"}, "program must be a str, not bytes"),
        ({"program": None}, "program must be a str, not None"),
        ({"program": "return '\ud800'[:0]\n#\udcff"}, "program is not valid UTF-8 text (lone surrogate"),
        ({"bindings": None}, "bindings must be a sequence of CodeBindingNamespace, not None"),
        ({"bindings": "tools"}, "bindings must be a sequence of CodeBindingNamespace, not str"),
        ({"bindings": [{"name": "tools"}]}, "bindings must hold CodeBindingNamespace items, not dict"),
        (
            {"bindings": [CodeBindingNamespace("tools", None)]},  # type: ignore[arg-type]
            "binding 'tools' functions must be a mapping, not None",
        ),
        ({"signal": "stop"}, "signal must be an AbortSignal or None, not str"),
        ({"limits": {"wall_seconds": 1}}, "limits must be a CodeRunLimits or None, not dict"),
        ({"limits": CodeRunLimits(wall_seconds=-1)}, "invalid limits: "),
    ],
)
async def test_a_mistyped_request_is_an_invalid_request_result(
    runtime: PythonSandboxRuntime, fields: dict[str, Any], message: str
) -> None:
    request: dict[str, Any] = {"program": "return 1", "bindings": []} | fields
    result = await runtime.run(CodeRunRequest(**request))
    assert result.error is not None
    assert result.error.kind == "invalid-request"
    assert result.error.message.startswith(message)
    assert result.value is NO_VALUE and result.logs == ()


async def test_a_request_that_is_not_a_request_is_an_invalid_request_result(
    runtime: PythonSandboxRuntime,
) -> None:
    result = await runtime.run("return 1")  # type: ignore[arg-type]
    assert result.error is not None
    assert (result.error.kind, result.error.message) == (
        "invalid-request",
        "request must be a CodeRunRequest, not str",
    )


async def test_the_runtime_still_runs_after_a_bad_request(runtime: PythonSandboxRuntime) -> None:
    await runtime.run(CodeRunRequest(b"return 1", []))  # type: ignore[arg-type]
    signal = AbortController().signal
    result = await runtime.run(CodeRunRequest("return 2", [], signal=signal))
    assert result.error is None and result.value == 2


# --- host memory is bounded by the output limit (item 7) --------------------------------------------


async def test_empty_lines_count_against_the_output_limit(runtime: PythonSandboxRuntime) -> None:
    """Each entry costs its text plus the newline that joins it: a program printing empty lines
    reaches the output limit instead of filling host memory until its wall clock ends."""
    result = await run(runtime, "while True:\n    print()", output_bytes=50_000, wall_seconds=20)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("output-limit", "outer output exceeded 50000 bytes")
    assert "\n".join(result.logs) == "\n" * 49_999


async def test_short_lines_past_the_kept_entries_are_coalesced(runtime: PythonSandboxRuntime) -> None:
    """The host keeps at most LOG_ENTRIES_KEPT separate entries and one coalesced tail, so what it
    retains is about the text itself; the rendered output is unchanged."""
    lines = LOG_ENTRIES_KEPT * 3
    result = await run(runtime, f"for i in range({lines}):\n    print(i % 10)\nreturn 'end'")
    assert result.error is None and result.value == "end"
    assert len(result.logs) == LOG_ENTRIES_KEPT + 1
    assert result.logs[:LOG_ENTRIES_KEPT] == tuple(str(i % 10) for i in range(LOG_ENTRIES_KEPT))
    assert "\n".join(result.logs) == "\n".join(str(i % 10) for i in range(lines))
    retained = sum(len(entry) for entry in result.logs)
    assert retained < 2 * lines


async def test_output_limit_still_counts_each_entrys_newline(runtime: PythonSandboxRuntime) -> None:
    fits = await run(runtime, "for i in range(10):\n    print('x' * 9)", output_bytes=100)
    assert fits.error is None and len(fits.logs) == 10
    over = await run(runtime, "for i in range(11):\n    print('x' * 9)", output_bytes=100)
    assert over.error is not None and over.error.kind == "output-limit"
    assert over.logs == ("x" * 9,) * 10


# --- only encodable text leaves a run (item 6) ------------------------------------------------------


@pytest.mark.parametrize("program", ["return '\\ud800'", "return 'ok\\udcff'", "return {'\\udfff': 1}"])
async def test_a_lone_surrogate_in_the_return_value_is_invalid_output(
    runtime: PythonSandboxRuntime, program: str
) -> None:
    result = await run(runtime, program)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == (
        "invalid-output",
        "program completion must be lossless JSON (lone surrogate in a string)",
    )


async def test_printing_a_lone_surrogate_raises_in_the_program(runtime: PythonSandboxRuntime) -> None:
    program = """
    try:
        print('ok\\udcff')
    except UnicodeEncodeError as error:
        print('refused:', error.reason)
    print('after')
    """
    result = await run(runtime, program)
    assert result.error is None
    assert result.logs == ("refused: surrogates not allowed", "after")


async def test_an_uncaught_surrogate_print_fails_with_encodable_text(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "print('\\ud800')")
    assert result.error is not None and result.error.kind == "exception"
    assert "UnicodeEncodeError" in result.error.message
    result.error.message.encode("utf-8")


async def test_a_lone_surrogate_in_binding_arguments_never_reaches_the_host(
    runtime: PythonSandboxRuntime,
) -> None:
    seen: list[Any] = []

    async def record(args: Any) -> Any:
        seen.append(args)
        return "called"

    bindings = [CodeBindingNamespace("tools", {"record": record}, ERROR_CLASS)]
    program = """
    out = []
    for args in ({'k': '\\ud800'}, {'\\udcff': 1}):
        try:
            out.append(await tools.record(args))
        except ToolCallError as error:
            out.append(str(error))
    return out
    """
    result = await run(runtime, program, bindings)
    assert result.error is None
    assert result.value == ["binding arguments must be lossless JSON"] * 2
    assert seen == []


async def test_a_lone_surrogate_in_a_binding_result_is_refused(runtime: PythonSandboxRuntime) -> None:
    program = """
    try:
        await tools.surrogate({})
    except ToolCallError as error:
        return str(error)
    """
    result = await run(runtime, program)
    assert result.value == "binding resolution must be lossless JSON (lone surrogate in a string)"


# --- one vocabulary: an unknown member and the closest names (item 5) -------------------------------


async def test_an_unknown_tool_reads_as_natively_with_the_closest_names(
    runtime: PythonSandboxRuntime,
) -> None:
    program = """
    out = []
    for name in ('send_email', 'zzz'):
        try:
            await tools[name]({})
        except ToolCallError as error:
            out.append([error.toolName, str(error)])
    return out
    """
    assert (await run(runtime, program, tools("tool"))).value == [
        ["send_email", 'unknown tool "send_email"; did you mean "send_mail"?'],
        ["zzz", 'unknown tool "zzz"'],
    ]
    assert (await run(runtime, program)).value == [
        ["send_email", 'unknown binding "tools.send_email"; did you mean "send_mail"?'],
        ["zzz", 'unknown binding "tools.zzz"'],
    ]


async def test_a_huge_unknown_name_is_echoed_cut(runtime: PythonSandboxRuntime) -> None:
    program = """
    try:
        await tools['x' * 4000]({})
    except ToolCallError as error:
        return str(error)
    """
    # Cut as natively (CL3): 200 characters of the name, head and tail around the marker.
    message = (await run(runtime, program, tools("tool"))).value
    head, cut, tail = message.partition("[… 3,824 characters cut]")
    assert cut and head == 'unknown tool "' + "x" * (len(head) - len('unknown tool "'))
    assert tail == "x" * (len(tail) - 1) + '"' and len(head + cut + tail) == len('unknown tool ""') + 200


# --- a run returns only once its processes are gone (item 7) ----------------------------------------


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root``, from ``/proc`` (the test's host-side evidence)."""
    found: list[int] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as handle:
                children = [int(part) for part in handle.read().split()]
        except OSError:
            continue
        found.extend(children)
        pending.extend(children)
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` still runs. A zombie has exited; one whose parent is not this process is
    init's to reap (a container's init may never do it), so it counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


HUGE_DONE = """
import socket, struct
body = ('{"t":"done","ok":true,"value":{' + ",".join('"k%d":1' % i for i in range(1_000_000)) + '}}')
await tools.record({})
socket.socket(fileno=3).sendall(struct.pack(">I", len(body)) + body.encode())
import time
time.sleep(60)
"""


@pytest.mark.parametrize(
    ("program", "limits", "abort"),
    [
        (HUGE_DONE, {}, False),
        ("await tools.record({})\nwhile True:\n    pass", {"wall_seconds": 2, "cpu_seconds": 30}, False),
        ("await tools.record({})\nimport time\ntime.sleep(60)", {"wall_seconds": 30}, True),
        ("await tools.record({})\nwhile True:\n    pass", {"cpu_seconds": 1}, False),
    ],
    ids=["hostile-huge-frame", "timeout", "abort", "cpu-limit"],
)
async def test_a_run_returns_only_once_its_processes_are_gone(
    runtime: PythonSandboxRuntime, program: str, limits: dict[str, Any], abort: bool
) -> None:
    seen: list[int] = []
    controller = AbortController()

    async def record(args: Any) -> Any:
        seen.extend(descendants(os.getpid()))
        if abort:
            asyncio.get_running_loop().call_later(0.2, controller.abort, "stop")
        return None

    request = CodeRunRequest(
        program,
        [CodeBindingNamespace("tools", {"record": record}, ERROR_CLASS)],
        signal=controller.signal,
        limits=CodeRunLimits(**limits),
    )
    result = await asyncio.wait_for(runtime.run(request), 60)
    assert seen, "the run's processes were seen while it ran"
    assert [pid for pid in seen if running(pid)] == [], result.error


# --- human time is not program time (item 3) --------------------------------------------------------


async def test_a_paused_clock_does_not_spend_the_wall_clock_budget(runtime: PythonSandboxRuntime) -> None:
    """A binding that waits (as for an approval) longer than the whole wall-clock limit, with the
    run's clock paused, still lets the program finish."""
    clock = RunClock()

    async def ask(args: Any) -> Any:
        clock.pause()
        try:
            await asyncio.sleep(2.5)
        finally:
            clock.resume()
        return "allowed"

    request = CodeRunRequest(
        "answer = await tools.ask({})\nimport time\ntime.sleep(0.3)\nreturn answer",
        [CodeBindingNamespace("tools", {"ask": ask}, ERROR_CLASS)],
        limits=CodeRunLimits(wall_seconds=2),
        clock=clock,
    )
    result = await asyncio.wait_for(runtime.run(request), 60)
    assert result.error is None and result.value == "allowed"
    assert not clock.paused


async def test_without_a_pause_the_same_wait_times_out(runtime: PythonSandboxRuntime) -> None:
    async def ask(args: Any) -> Any:
        await asyncio.sleep(2.5)
        return "allowed"

    request = CodeRunRequest(
        "return await tools.ask({})",
        [CodeBindingNamespace("tools", {"ask": ask}, ERROR_CLASS)],
        limits=CodeRunLimits(wall_seconds=2),
        clock=RunClock(),
    )
    result = await asyncio.wait_for(runtime.run(request), 60)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("timeout", "wall-clock ceiling reached (2s)")


async def test_the_budget_left_after_a_pause_still_ends_the_run(runtime: PythonSandboxRuntime) -> None:
    clock = RunClock()

    async def ask(args: Any) -> Any:
        clock.pause()
        await asyncio.sleep(0.5)
        clock.resume()
        return None

    request = CodeRunRequest(
        "await tools.ask({})\nimport time\ntime.sleep(60)",
        [CodeBindingNamespace("tools", {"ask": ask}, ERROR_CLASS)],
        limits=CodeRunLimits(wall_seconds=1),
        clock=clock,
    )
    result = await asyncio.wait_for(runtime.run(request), 60)
    assert result.error is not None and result.error.kind == "timeout"


def test_run_clock_pauses_nest_and_resume_needs_a_pause() -> None:
    clock = RunClock()
    told: list[str] = []
    unsubscribe = clock.subscribe(lambda: told.append("running"))
    clock.pause()
    clock.pause()
    clock.resume()
    assert clock.paused and told == []
    clock.resume()
    assert not clock.paused and told == ["running"]
    assert clock.paused_seconds() >= 0
    unsubscribe()
    clock.pause()
    clock.resume()
    assert told == ["running"]
    with pytest.raises(RuntimeError, match="without a matching pause"):
        clock.resume()


async def test_a_clock_of_the_wrong_type_is_an_invalid_request(runtime: PythonSandboxRuntime) -> None:
    result = await runtime.run(CodeRunRequest("return 1", [], clock=30))  # type: ignore[arg-type]
    assert result.error is not None
    assert (result.error.kind, result.error.message) == (
        "invalid-request",
        "clock must be a RunClock or None, not int",
    )
