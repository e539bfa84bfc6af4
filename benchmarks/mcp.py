"""MCP through toolrt: one call via the toolrt client against the bare ``mcp`` SDK session, and a
100-call Code Mode program beside the same 100 calls made natively — all against one stdio server.

Run by hand (never from the test suite), from the repository root::

    .venv/bin/python benchmarks/mcp.py --runs 3
    taskset -c 1 .venv/bin/python benchmarks/mcp.py --runs 3      # pinned to one CPU
    .venv/bin/python benchmarks/mcp.py --quick                    # smoke test, not a measurement

The server is ``mcp-server-time`` (PyPI, pinned in the ``test`` extra; an SDK-written stdio server),
started once per child process, outside the timed region; every timed call is its
``get_current_time({"timezone": "UTC"})``.

What is timed:

- ``bare/1-call``: ``await client.call_tool(...)`` on the SDK's ``mcp.Client`` over stdio — the floor.
- ``toolrt/1-call``: ``await runtime.execute(ToolExecutionInput("mcp__time__get_current_time", ...))``
  with the server connected by ``toolrt.mcp.McpConnections``: the whole pipeline (default policies:
  the output budget) plus the client's mapping of arguments and results. Target: at most 1.1× the
  floor plus the pipeline's own cost.
- ``toolrt/local-call``: the same ``runtime.execute`` on a local ``@tool`` returning the same dict —
  the pipeline's own cost, to read the target against.
- ``bare/100-calls``, ``native/100-calls``: 100 sequential calls, bare and through ``runtime.execute``.
- ``code/100-calls``: one ``run_code`` program making the 100 calls (``for`` loop, one ``await`` each)
  on ``ToolRuntime(mode="code", code_runtime=PythonSandboxRuntime(pool_size=1))``; before every sample
  the script awaits ``code_runtime.warm()`` outside the timed region (a booted, confined, idle child),
  as ``benchmarks/codemode.py`` does.

Before timing, every path must return the server's answer (a dict naming the timezone ``UTC``; the
programs print ``100``). Method: ``_harness.py`` (one child process per case per run, ``--runs`` times
interleaved; median of per-run medians, median of per-run p95s, spread); samples are budgeted on the
whole sample (the warm-up pause included): ``--target-s`` seconds, at least 30 samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from _harness import (
    Case,
    CaseSummary,
    Paced,
    Timed,
    bench_main,
    format_duration,
    measure_paced,
    parse_child_args,
    report_child_outcome,
    run_case_here,
)

# This script is named mcp.py, so with its folder on sys.path `import mcp` would find it instead of the
# SDK: the folder leaves the path once the harness is imported.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
SERVER_ARGS = ["--local-timezone", "UTC"]
TOOL = "get_current_time"
NAME = "mcp__time__get_current_time"
ARGS = {"timezone": "UTC"}
CALLS = 100
PROGRAM = (
    f"n = 0\nfor _ in range({CALLS}):\n"
    f'    now = await tools.{NAME}({{"timezone": "UTC"}})\n'
    '    n += now["timezone"] == "UTC"\nprint(n)'
)
MIN_SAMPLES = 30
QUICK_MIN_SAMPLES = 5
MAX_SAMPLES = 3000

# Everything a case opens lives until its child process exits (the harness samples in the task that
# ran the setup, so the SDK's task groups stay valid).
_STACK = contextlib.AsyncExitStack()


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def _bare_client() -> Any:
    from mcp.client.stdio import StdioServerParameters

    from mcp import Client

    client = await _STACK.enter_async_context(
        Client(StdioServerParameters(command=TIME_SERVER, args=SERVER_ARGS))
    )
    result = await client.call_tool(TOOL, ARGS)
    _expect(not result.is_error and "UTC" in result.content[0].text, f"bare call failed: {result}")
    return client


async def _runtime(mode: str = "native") -> Any:
    from toolrt import ToolRuntime
    from toolrt.mcp import McpConnections, StdioServer

    code_runtime = None
    if mode == "code":
        from toolrt.sandbox import PythonSandboxRuntime

        code_runtime = PythonSandboxRuntime(pool_size=1)
        _STACK.push_async_callback(code_runtime.aclose)
    runtime = ToolRuntime(mode=mode, code_runtime=code_runtime)  # type: ignore[arg-type]
    await _STACK.enter_async_context(McpConnections(runtime, [StdioServer("time", TIME_SERVER, SERVER_ARGS)]))
    return runtime


def _call(name: str, index: int = 0) -> Any:
    from toolrt import AbortSignal, ToolExecutionInput

    return ToolExecutionInput(call_id=f"b{index}", name=name, arguments=dict(ARGS), signal=AbortSignal())


async def _check(runtime: Any, name: str) -> None:
    result = await runtime.execute(_call(name))
    _expect(not result.is_error and result.value["timezone"] == "UTC", f"{name} failed: {result}")


async def setup_bare_one() -> Timed:
    client = await _bare_client()
    return lambda: client.call_tool(TOOL, ARGS)


async def setup_toolrt_one() -> Timed:
    runtime = await _runtime()
    await _check(runtime, NAME)
    call = _call(NAME)
    return lambda: runtime.execute(call)


async def setup_toolrt_local() -> Timed:
    from toolrt import ToolRuntime, tool

    @tool
    async def get_current_time(timezone: str) -> dict:
        """The current time in a timezone."""
        return {"timezone": timezone, "datetime": "2026-12-02T00:00:00+00:00", "day_of_week": "Wednesday"}

    runtime = ToolRuntime()
    runtime.register(get_current_time)
    await _check(runtime, TOOL)
    call = _call(TOOL)
    return lambda: runtime.execute(call)


async def setup_bare_hundred() -> Timed:
    client = await _bare_client()

    async def hundred() -> None:
        for _ in range(CALLS):
            await client.call_tool(TOOL, ARGS)

    return hundred


async def setup_native_hundred() -> Timed:
    runtime = await _runtime()
    await _check(runtime, NAME)
    calls = [_call(NAME, index) for index in range(CALLS)]

    async def hundred() -> None:
        for call in calls:
            await runtime.execute(call)

    return hundred


async def setup_code_hundred() -> Timed:
    from toolrt import AbortSignal, ToolExecutionInput

    runtime = await _runtime("code")
    code_runtime = runtime.code_runtime
    program = ToolExecutionInput(
        call_id="program",
        name="run_code",
        arguments={"code": PROGRAM, "description": "100 calls"},
        signal=AbortSignal(),
    )
    await code_runtime.warm()
    result = await runtime.execute(program)
    _expect(
        not result.is_error and result.content[0]["text"] == str(CALLS), f"program failed: {result.content}"
    )
    return Paced(lambda: runtime.execute(program), code_runtime.warm)


CASES = [
    Case(
        "bare/1-call",
        "mcp.Client.call_tool over stdio (the floor)",
        setup_bare_one,
        "1 call",
        packages=("mcp",),
    ),
    Case("toolrt/1-call", "runtime.execute via McpConnections", setup_toolrt_one, "1 call", "bare/1-call"),
    Case(
        "toolrt/local-call",
        "runtime.execute on a local @tool (the pipeline alone)",
        setup_toolrt_local,
        "1 call",
    ),
    Case("bare/100-calls", "100 × mcp.Client.call_tool", setup_bare_hundred, "100 calls"),
    Case(
        "native/100-calls",
        "100 × runtime.execute via McpConnections",
        setup_native_hundred,
        "100 calls",
        "bare/100-calls",
    ),
    Case(
        "code/100-calls",
        "one run_code program making the 100 calls",
        setup_code_hundred,
        "100 calls",
        "bare/100-calls",
    ),
]


# --- the child: paced sampling (few, long samples) ------------------------------------------------------


def child_main(argv: Sequence[str]) -> int:
    """``--case NAME [--json] [--warmup-s S] [--target-s S]``: one case in this process."""
    case, args = parse_child_args(argv, CASES)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

    async def run() -> Any:
        try:
            return await run_case_here(
                case,
                lambda fn: measure_paced(
                    fn,
                    warmup_s=args.warmup_s,
                    target_s=args.target_s,
                    min_samples=MIN_SAMPLES,
                    quick_min_samples=QUICK_MIN_SAMPLES,
                    max_samples=MAX_SAMPLES,
                ),
            )
        finally:
            with contextlib.suppress(Exception):
                await _STACK.aclose()

    outcome = asyncio.run(run())
    return report_child_outcome(args.case, outcome, as_json=args.json, unit="samples")


# --- the verdicts ---------------------------------------------------------------------------------------


def verdicts(summaries: Mapping[str, CaseSummary]) -> str:
    def median(name: str) -> float | None:
        summary = summaries.get(name)
        if summary is None or not summary.ok:
            return None
        return statistics.median(run.median_ns for run in summary.runs)

    lines = ["Verdicts (medians of per-run medians):"]
    bare, through, local = median("bare/1-call"), median("toolrt/1-call"), median("toolrt/local-call")
    if bare is not None and through is not None and local is not None:
        budget = 1.1 * bare + local
        verdict = "meets" if through <= budget else "MISSES"
        lines.append(
            f"- one call: toolrt {format_duration(through)} vs bare {format_duration(bare)} "
            f"({through / bare:.2f}×); target 1.1 × bare + pipeline ({format_duration(local)}) = "
            f"{format_duration(budget)}: {verdict}; toolrt's own share {format_duration(through - bare)}"
        )
    hundred_bare, native, code = (
        median("bare/100-calls"),
        median("native/100-calls"),
        median("code/100-calls"),
    )
    if hundred_bare is not None and native is not None and code is not None:
        lines.append(
            f"- 100 calls: bare {format_duration(hundred_bare)}, native {format_duration(native)} "
            f"({native / hundred_bare:.2f}×), one Code Mode program {format_duration(code)} "
            f"({code / hundred_bare:.2f}×; {code / native:.2f}× native); per call in the program "
            f"{format_duration(code / CALLS)} vs {format_duration(native / CALLS)} native"
        )
    return "\n".join(lines) if len(lines) > 1 else ""


if __name__ == "__main__":
    if "--case" in sys.argv[1:]:
        raise SystemExit(child_main(sys.argv[1:]))
    raise SystemExit(
        bench_main(
            CASES,
            title="MCP through toolrt: the client vs the bare SDK session; 100 calls, Code Mode vs native",
            baseline="bare/1-call",
            epilogue=verdicts,
        )
    )
