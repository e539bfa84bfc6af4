"""Per-call overhead of toolrt's full pipeline, beside its floors and three existing tool layers.

Run by hand (never from the test suite), from the repository root::

    .venv/bin/python benchmarks/pipeline.py --runs 3          # toolrt + floors
    .venv-bench/bin/python benchmarks/pipeline.py --runs 3    # ... + the anchors (bench extra)
    .venv-bench/bin/python benchmarks/pipeline.py --only toolrt --quick   # smoke test, not a measurement

The anchors need the optional extra (``pip install -e '.[bench]'``, best in a separate venv such as
``.venv-bench``); without it they print as skipped. The checkout's ``src/`` is put first on the
children's ``PYTHONPATH``, so the toolrt measured is this working tree whether or not it is installed.

What is timed: ONE call of a trivial validated tool ``add(a: int, b: int) -> int`` with arguments
``{"a": 1, "b": 2}``:

- toolrt ``ToolRuntime.execute()`` — (1) no listeners; (2) one pass-through listener on each of
  ``tools/pre-execute``, ``tools/execute`` and ``tools/post-execute`` plus one ``tools/result``
  observer; (3) a *sync* body, which toolrt runs on a worker thread. Every runtime times its calls
  (the default deadline, issue 12); (4) ``no-deadline`` is case 1 with ``tool_timeout_ms=UNBOUNDED``,
  so the two, interleaved, give the deadline's cost on a body that never awaits; (5) and (6) the same
  pair for a body that awaits once (``await asyncio.sleep(0)``), where the deadline arms its timer.
- Floors: ``await add(1, 2)`` (the bare coroutine), ``asyncio.to_thread(add_sync, 1, 2)`` (one
  thread-pool hop: the floor of case 3, whose target is ≤ 1.2× it), ``add_sync(**args)`` and
  ``add_sync(**json.loads(s))``.
- Anchors, each as a ratio to toolrt's no-listener median: OpenAI Agents SDK
  ``FunctionTool.on_invoke_tool(ToolContext, '{"a":1,"b":2}')`` (one ``ToolContext`` reused), Pydantic AI
  ``ToolManager.handle_call(ToolCallPart("add", json))`` (the manager built once via
  ``ToolManager(toolset=FunctionToolset([add])).for_run_step(RunContext(... TestModel ...))``) and
  FastMCP ``FunctionTool.run({"a": 1, "b": 2})`` (the tool object taken from the server).

Every call's input (``ToolExecutionInput``, ``ToolContext``, ``ToolCallPart``, the argument dict or
JSON string) is built once, outside the timed region. The Agents SDK and Pydantic AI take a JSON
string and parse it inside the call (a few µs here); toolrt and FastMCP take a dict. Before timing,
every path must return 3, and every validating path must reject ``{"a": "x", "b": 2}`` (toolrt: a
failure result with error code ``INVALID_ARGS``; Agents: its error string for the model; Pydantic AI
and FastMCP: an exception).

Method (see ``_harness.py`` and contract BM1 in ``docs/contract.md``): each case runs in its own
child process, ``--runs`` times interleaved; the table shows the median of per-run medians, the median
of per-run p95s and the spread of the per-run medians. Reference figures from that document for this
machine: Agents ≈ 12–13.5 µs, Pydantic AI ToolManager ≈ 53 µs, FastMCP run ≈ 66–94 µs, to_thread hop
≈ 120–130 µs. Treat differences under about 2× between separate runs as noise.

The tool functions are deliberately defined WITHOUT ``from __future__ import annotations``, so their
annotations are real types, as in the reference measurements.
"""

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from _harness import Case, CaseSummary, Skip, Timed, bench_main, format_duration

ARGS: dict[str, int] = {"a": 1, "b": 2}
ARGS_JSON = '{"a":1,"b":2}'
BAD_ARGS: dict[str, Any] = {"a": "x", "b": 2}
BAD_ARGS_JSON = '{"a":"x","b":2}'
BENCH_EXTRA = "skipped (pip install -e '.[bench]')"
STAGES = ("pre", "execute", "post", "result")
SYNC_TARGET = 1.2  # the sync case's target, as a multiple of the bare to_thread hop


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_sync(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _sync_add_named_add() -> Any:
    """A sync body whose ``__name__`` is ``add`` (tool names come from the function name)."""

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


# --- floors ------------------------------------------------------------------------------------------------


async def setup_await() -> Timed:
    _expect(await add(1, 2) == 3, "await add(1, 2) != 3")
    return lambda: add(1, 2)


async def setup_to_thread() -> Timed:
    _expect(await asyncio.to_thread(add_sync, 1, 2) == 3, "to_thread(add_sync, 1, 2) != 3")
    return lambda: asyncio.to_thread(add_sync, 1, 2)


async def setup_kwargs() -> Timed:
    args = dict(ARGS)
    _expect(add_sync(**args) == 3, "add_sync(**args) != 3")
    return lambda: add_sync(**args)


async def setup_json_kwargs() -> Timed:
    loads = json.loads
    _expect(add_sync(**loads(ARGS_JSON)) == 3, "add_sync(**json.loads(s)) != 3")
    return lambda: add_sync(**loads(ARGS_JSON))


# --- toolrt ------------------------------------------------------------------------------------------------


async def add_awaiting(a: int, b: int) -> int:
    """Add two integers, after one trip through the event loop."""
    await asyncio.sleep(0)
    return a + b


async def _toolrt_case(
    *, listeners: bool, sync_body: bool, deadline: bool = True, awaiting: bool = False
) -> Timed:
    from toolrt import UNBOUNDED, AbortSignal, ToolExecutionInput, ToolRuntime, tool

    runtime = ToolRuntime() if deadline else ToolRuntime(tool_timeout_ms=UNBOUNDED)
    if awaiting:
        add_awaiting.__name__ = "add"
        runtime.register(tool(add_awaiting))
    else:
        runtime.register(tool(_sync_add_named_add() if sync_body else add))
    signal = AbortSignal()
    if listeners:
        # First prove that listeners of these shapes fire (counting copies, removed again) ...
        hits: dict[str, int] = dict.fromkeys(STAGES, 0)

        def count(event: str) -> None:
            hits[event] += 1

        probes = [
            runtime.on("tools/pre-execute", lambda execution, next: (count("pre"), next())[1]),
            runtime.on("tools/execute", lambda execution, next: (count("execute"), next())[1]),
            runtime.on("tools/post-execute", lambda execution, result, next: (count("post"), next())[1]),
            runtime.on("tools/result", lambda execution, result: count("result")),
        ]
        probe = await runtime.execute(
            ToolExecutionInput(call_id="probe", name="add", arguments=dict(ARGS), signal=signal)
        )
        _expect(getattr(probe, "value", None) == 3, f"toolrt with probes returned {probe!r}")
        _expect(all(hits.values()), f"not every listener fired: {hits}")
        for dispose in probes:
            dispose()
        # ... then time the plain pass-through ones.
        runtime.on("tools/pre-execute", lambda execution, next: next())
        runtime.on("tools/execute", lambda execution, next: next())
        runtime.on("tools/post-execute", lambda execution, result, next: next())
        runtime.on("tools/result", lambda execution, result: None)

    result = await runtime.execute(
        ToolExecutionInput(call_id="check-ok", name="add", arguments=dict(ARGS), signal=signal)
    )
    _expect(not result.is_error and getattr(result, "value", None) == 3, f"toolrt returned {result!r}")
    bad = await runtime.execute(
        ToolExecutionInput(call_id="check-bad", name="add", arguments=dict(BAD_ARGS), signal=signal)
    )
    info = getattr(getattr(bad, "error", None), "info", None)
    _expect(
        bad.is_error and getattr(info, "code", None) == "INVALID_ARGS",
        f"toolrt accepted bad arguments: {bad!r}",
    )

    execute = runtime.execute
    call = ToolExecutionInput(call_id="c1", name="add", arguments=dict(ARGS), signal=signal)
    return lambda: execute(call)


async def setup_toolrt() -> Timed:
    return await _toolrt_case(listeners=False, sync_body=False)


async def setup_toolrt_listeners() -> Timed:
    return await _toolrt_case(listeners=True, sync_body=False)


async def setup_toolrt_sync() -> Timed:
    return await _toolrt_case(listeners=False, sync_body=True)


async def setup_toolrt_no_deadline() -> Timed:
    return await _toolrt_case(listeners=False, sync_body=False, deadline=False)


async def setup_toolrt_awaits() -> Timed:
    return await _toolrt_case(listeners=False, sync_body=False, awaiting=True)


async def setup_toolrt_awaits_no_deadline() -> Timed:
    return await _toolrt_case(listeners=False, sync_body=False, deadline=False, awaiting=True)


# --- anchors (optional ``bench`` extra) ------------------------------------------------------------------


async def setup_openai_agents() -> Timed:
    try:
        from agents import function_tool, set_tracing_disabled
        from agents.tool_context import ToolContext
    except ImportError as error:
        raise Skip(f"openai-agents not installed ({error})") from None
    set_tracing_disabled(True)
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # the bad-args check logs an error
    function = function_tool(add)
    context: Any = ToolContext(context=None, tool_name="add", tool_call_id="c1", tool_arguments=ARGS_JSON)
    _expect(await function.on_invoke_tool(context, ARGS_JSON) == 3, "agents did not return 3")
    bad = await function.on_invoke_tool(context, BAD_ARGS_JSON)
    _expect(isinstance(bad, str) and "error" in bad.lower(), f"agents accepted bad arguments: {bad!r}")
    invoke = function.on_invoke_tool
    return lambda: invoke(context, ARGS_JSON)


async def setup_pydantic_ai() -> Timed:
    try:
        from pydantic_ai import RunContext
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage
    except ImportError as error:
        raise Skip(f"pydantic-ai-slim not installed ({error})") from None

    async def manager() -> Any:
        context: Any = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        return await ToolManager(toolset=FunctionToolset([add])).for_run_step(context)

    checker = await manager()  # a separate manager: the failed call below updates retry bookkeeping
    _expect(await checker.handle_call(ToolCallPart("add", ARGS_JSON)) == 3, "pydantic-ai did not return 3")
    try:
        bad = await checker.handle_call(ToolCallPart("add", BAD_ARGS_JSON))
    except Exception:
        pass
    else:
        raise AssertionError(f"pydantic-ai accepted bad arguments: {bad!r}")

    handle_call = (await manager()).handle_call
    part = ToolCallPart("add", ARGS_JSON)
    _expect(await handle_call(part) == 3, "pydantic-ai did not return 3")
    return lambda: handle_call(part)


async def setup_fastmcp() -> Timed:
    try:
        from fastmcp import FastMCP
    except ImportError as error:
        raise Skip(f"fastmcp not installed ({error})") from None
    logging.getLogger("fastmcp").setLevel(logging.CRITICAL)
    server = FastMCP("bench")
    server.tool(add)
    function: Any = await server.get_tool("add")
    result = await function.run(dict(ARGS))
    structured = getattr(result, "structured_content", None) or {}
    _expect(structured.get("result") == 3 and not result.is_error, f"fastmcp returned {result!r}")
    try:
        bad = await function.run(dict(BAD_ARGS))
    except Exception:
        pass
    else:
        _expect(bool(getattr(bad, "is_error", False)), f"fastmcp accepted bad arguments: {bad!r}")
    run = function.run
    args = dict(ARGS)
    return lambda: run(args)


# --- the table ---------------------------------------------------------------------------------------------

BASELINE = "toolrt/no-listeners"
AWAIT_FLOOR = "floor/await"
THREAD_FLOOR = "floor/to_thread"

CASES = [
    Case(BASELINE, "execute(add), async body, no listeners", setup_toolrt, "toolrt", AWAIT_FLOOR),
    Case(
        "toolrt/listeners",
        "execute(add), pre-/execute/post-execute pass-through + result observer",
        setup_toolrt_listeners,
        "toolrt",
        AWAIT_FLOOR,
    ),
    Case(
        "toolrt/sync-body",
        "execute(add), SYNC body on a worker thread",
        setup_toolrt_sync,
        "toolrt",
        THREAD_FLOOR,
    ),
    Case(
        "toolrt/no-deadline",
        "execute(add), no listeners, tool_timeout_ms=UNBOUNDED",
        setup_toolrt_no_deadline,
        "toolrt",
        AWAIT_FLOOR,
    ),
    Case(
        "toolrt/awaits",
        "execute(add), a body that awaits sleep(0) once",
        setup_toolrt_awaits,
        "toolrt",
        AWAIT_FLOOR,
    ),
    Case(
        "toolrt/awaits-no-deadline",
        "execute(add), a body that awaits sleep(0) once, tool_timeout_ms=UNBOUNDED",
        setup_toolrt_awaits_no_deadline,
        "toolrt",
        AWAIT_FLOOR,
    ),
    Case(AWAIT_FLOOR, "await add(1, 2)", setup_await, "floor"),
    Case(THREAD_FLOOR, "await asyncio.to_thread(add_sync, 1, 2)", setup_to_thread, "floor"),
    Case("floor/kwargs", "add_sync(**args)", setup_kwargs, "floor"),
    Case("floor/json-kwargs", "add_sync(**json.loads(s))", setup_json_kwargs, "floor"),
    Case(
        "openai-agents",
        "FunctionTool.on_invoke_tool(ctx, json), ctx reused",
        setup_openai_agents,
        "anchor",
        AWAIT_FLOOR,
        packages=("openai-agents",),
    ),
    Case(
        "pydantic-ai",
        "ToolManager.handle_call(ToolCallPart(json))",
        setup_pydantic_ai,
        "anchor",
        AWAIT_FLOOR,
        packages=("pydantic-ai-slim",),
    ),
    Case(
        "fastmcp",
        "FunctionTool.run(dict)",
        setup_fastmcp,
        "anchor",
        AWAIT_FLOOR,
        packages=("fastmcp",),
    ),
]


def verdicts(summaries: Mapping[str, CaseSummary]) -> str:
    """Lines under the table: the sync-body target and the anchors' ratios in words."""
    lines: list[str] = []
    sync, hop, base = summaries.get("toolrt/sync-body"), summaries.get(THREAD_FLOOR), summaries.get(BASELINE)
    if sync is not None and hop is not None and sync.ok and hop.ok:
        ratio = sync.median_ns / hop.median_ns
        verdict = "meets" if ratio <= SYNC_TARGET else "MISSES"
        lines.append(
            f"- sync body: {format_duration(sync.median_ns)} = {ratio:.2f}× the bare to_thread hop "
            f"({format_duration(hop.median_ns)}); {verdict} the ≤ {SYNC_TARGET}× target."
        )
    if base is not None and base.ok:
        for name in ("openai-agents", "pydantic-ai", "fastmcp"):
            anchor = summaries.get(name)
            if anchor is not None and anchor.ok:
                lines.append(
                    f"- {name}: {format_duration(anchor.median_ns)} = "
                    f"{anchor.median_ns / base.median_ns:.2f}× toolrt no-listeners "
                    f"({format_duration(base.median_ns)})."
                )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(
        bench_main(
            CASES,
            title="toolrt pipeline: one execute() of add(a, b) vs floors and other tool layers",
            baseline=BASELINE,
            skipped_text=BENCH_EXTRA,
            epilogue=verdicts,
        )
    )
