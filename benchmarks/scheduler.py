"""Wall time of ONE batch of 100 concurrent tool calls through toolrt's scheduler, beside its floor
and three existing tool layers.

Run by hand (never from the test suite), from the repository root::

    .venv/bin/python benchmarks/scheduler.py --runs 3          # toolrt + the floor
    .venv-bench/bin/python benchmarks/scheduler.py --runs 3    # ... + the anchors (bench extra)
    .venv-bench/bin/python benchmarks/scheduler.py --only toolrt --quick   # smoke test, not a measurement

The anchors need the optional extra (``pip install -e '.[bench]'``) plus ``langgraph`` and
``langchain-core`` for the LangGraph anchor, best in a separate venv such as ``.venv-bench``; without
them they print as skipped. The checkout's ``src/`` is put first on the children's ``PYTHONPATH``,
so the toolrt measured is this working tree whether or not it is installed.

What is timed: ONE batch of 100 calls of a concurrency-safe tool ``slow(i: int) -> int`` whose body
is ``await asyncio.sleep(0.01); return i`` (ideal wall time 10 ms), with ``i`` = 0..99:

- toolrt ``run_tool_calls(runtime, calls, signal=..., max_parallel=100)`` on 100
  ``ToolCall(id, "slow", '{"i": k}')`` (raw JSON text, as a model emits it), the tool registered
  with ``@tool(is_concurrency_safe=lambda args: True)``; (1) no callbacks; (2) ``on_call`` /
  ``on_result`` appending ``tool/call`` / ``tool/result`` events to a fresh in-memory
  ``SessionLog`` per batch, as the agent loop does (``parsed_arguments`` is the parsed dict, as in
  ``toolrt.loop._agent``): the cost of logging.
- Floor: ``asyncio.gather`` of 100 bare ``slow(i)`` coroutines (target: toolrt ≤ 1.15× it).
- Anchors: LangGraph ``ToolNode`` in a compiled ``StateGraph(MessagesState)`` (START → tools → END),
  ``ainvoke`` on an ``AIMessage`` with 100 ``tool_calls``; Pydantic AI ``asyncio.gather`` of 100
  ``ToolManager.handle_call(ToolCallPart("slow", json))`` (the manager built once, as in
  ``pipeline.py``); OpenAI Agents SDK ``asyncio.gather`` of 100
  ``FunctionTool.on_invoke_tool(ToolContext, json)`` (one ``ToolContext`` per call id, built once).

Every batch's inputs (calls, parts, contexts, JSON strings, the ``AIMessage``) are built once,
outside the timed region; the coroutines and tasks are created inside it, as in real use. Before
timing, every path must return the 100 results in call order (toolrt: successes whose values are
0..99 with the call ids in order; LangGraph: 100 ToolMessages with contents "0".."99" and matching
``tool_call_id`` values; the gathers: ``list(range(100))``), so the sum is 4950.

Method (see ``_harness.py`` and ``docs/contract.md`` §8.2 "Batch of 100", BM2): each case
runs in its own child process, ``--runs`` times interleaved; a run is a warm-up (≥ 10 batches and
``--warmup-s``) then a FIXED ``BATCH_SAMPLES`` = 25 timed batches (the harness's time-based count is
clamped to ≥ 300 samples, far too many for 10–70 ms batches, so this script's child mode calls
``measure`` with a fixed count; the parent mode is the harness's ``bench_main``). The table shows the
median of per-run medians, the median of per-run p95s and the spread of the per-run medians.
Reference figures from that document for this machine class (median, p95): floor 12.9 ms (13.5;
best run 12.4), OpenAI Agents gather 17.6 ms (18.6; best run 16.6), Pydantic AI gather 20.3 ms
(21.4), LangGraph ToolNode 84.2 ms (125; best run 62.3). On a 2-core machine the gap to the floor is
the CPU work per call; "per call" below is (median − floor) / 100.

The tool functions are deliberately defined WITHOUT ``from __future__ import annotations``, so their
annotations are real types, as in the reference measurements.
"""

import argparse
import asyncio
import json
import logging
import sys
import warnings
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from _harness import (
    SRC_DIR,
    Case,
    CaseSummary,
    Skip,
    Timed,
    bench_main,
    format_duration,
    measure,
    report_child_outcome,
    run_case_here,
)

N_CALLS = 100
SLEEP_S = 0.01
MAX_PARALLEL = 100
BATCH_SAMPLES = 25  # timed batches per run (the reference method's fixed count for batch cases)
TARGET = 1.15  # toolrt's target, as a multiple of the floor
EXPECTED = list(range(N_CALLS))
EXPECTED_SUM = sum(EXPECTED)  # 4950
CALL_IDS = [f"call_{i}" for i in range(N_CALLS)]
ARGS_JSON = [json.dumps({"i": i}) for i in range(N_CALLS)]
BENCH_EXTRA = "skipped (pip install -e '.[bench]' langgraph langchain-core)"
REFERENCE_MS = {  # contract BM2: median of 3 run medians
    "floor/gather": 12.9,
    "openai-agents": 17.6,
    "pydantic-ai": 20.3,
    "langgraph": 84.2,
}


async def slow(i: int) -> int:
    """Sleep 10 ms, then return i.

    Args:
        i: The number to return.
    """
    await asyncio.sleep(SLEEP_S)
    return i


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _expect_values(values: Sequence[Any], what: str) -> None:
    _expect(len(values) == N_CALLS, f"{what} returned {len(values)} results, not {N_CALLS}")
    _expect(list(values) == EXPECTED, f"{what} results are not 0..99 in call order: {list(values)[:10]}...")
    _expect(sum(values) == EXPECTED_SUM, f"{what} sum != {EXPECTED_SUM}")


# --- the floor ---------------------------------------------------------------------------------------------


async def setup_floor() -> Timed:
    gather = asyncio.gather
    indices = range(N_CALLS)

    def batch() -> Any:
        return gather(*[slow(i) for i in indices])

    _expect_values(await batch(), "asyncio.gather(slow(i))")
    return batch


# --- toolrt ------------------------------------------------------------------------------------------------


def _check_committed(committed: Sequence[Any], what: str) -> None:
    _expect([c.call.id for c in committed] == CALL_IDS, f"{what}: results are not in call order / incomplete")
    bad = [c.result for c in committed if c.result.is_error]
    _expect(not bad, f"{what}: {len(bad)} calls failed, e.g. {bad[:1]!r}")
    _expect_values([c.result.value for c in committed], what)


async def _toolrt_case(*, log_events: bool) -> Timed:
    from toolrt import AbortSignal, ToolRuntime, tool
    from toolrt.loop import SessionLog, tool_call_event, tool_result_event
    from toolrt.loop._messages import ToolCall
    from toolrt.loop._scheduler import run_tool_calls

    runtime = ToolRuntime()
    runtime.register(tool(is_concurrency_safe=lambda args: True)(slow))
    signal = AbortSignal()
    calls = [ToolCall(CALL_IDS[i], "slow", ARGS_JSON[i]) for i in range(N_CALLS)]

    if not log_events:

        def batch() -> Any:
            return run_tool_calls(runtime, calls, signal=signal, max_parallel=MAX_PARALLEL)

        _check_committed(await batch(), "toolrt run_tool_calls")
        return batch

    last_log: list[Any] = [None]

    async def logged_batch() -> Any:
        log = SessionLog.in_memory()
        append = log.append

        def on_call(call: Any, arguments: Any) -> None:
            append(*tool_call_event(call.id, call.name, call.arguments, arguments))

        def on_result(committed: Any) -> None:
            append(*tool_result_event(committed.call.id, committed.call.name, committed.result))

        last_log[0] = log
        return await run_tool_calls(
            runtime, calls, signal=signal, max_parallel=MAX_PARALLEL, on_call=on_call, on_result=on_result
        )

    _check_committed(await logged_batch(), "toolrt run_tool_calls + SessionLog")
    events = last_log[0].events()
    call_events = [e.data["call_id"] for e in events if e.type == "tool/call"]
    result_events = [e.data["call_id"] for e in events if e.type == "tool/result"]
    _expect(len(events) == 2 * N_CALLS, f"the log holds {len(events)} events, not {2 * N_CALLS}")
    _expect(call_events == CALL_IDS and result_events == CALL_IDS, "logged events are not in call order")
    _expect(
        all(
            e.data["parsed_arguments"] == {"i": i}
            for i, e in enumerate(x for x in events if x.type == "tool/call")
        ),
        "tool/call events do not carry the parsed arguments",
    )
    return logged_batch


async def setup_toolrt() -> Timed:
    return await _toolrt_case(log_events=False)


async def setup_toolrt_logged() -> Timed:
    return await _toolrt_case(log_events=True)


# --- anchors (optional ``bench`` extra + langgraph) ------------------------------------------------------


async def setup_langgraph() -> Timed:
    try:
        from langchain_core.messages import AIMessage, ToolMessage
        from langchain_core.tools import StructuredTool
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode
    except ImportError as error:
        raise Skip(f"langgraph / langchain-core not installed ({error})") from None
    warnings.simplefilter("ignore")  # deprecation notices from the prebuilt module are not the subject

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([StructuredTool.from_function(coroutine=slow)]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile()
    message = AIMessage(
        content="",
        tool_calls=[
            {"name": "slow", "args": {"i": i}, "id": CALL_IDS[i], "type": "tool_call"} for i in EXPECTED
        ],
    )
    state = {"messages": [message]}

    out = await graph.ainvoke(state)
    replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    _expect([m.tool_call_id for m in replies] == CALL_IDS, "langgraph tool messages not in call order")
    _expect(all(m.status == "success" for m in replies), f"langgraph tool failed: {replies[:1]!r}")
    _expect_values([int(m.content) for m in replies], "langgraph ToolNode")
    ainvoke = graph.ainvoke
    return lambda: ainvoke(state)


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

    context: Any = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    handle_call = (await ToolManager(toolset=FunctionToolset([slow])).for_run_step(context)).handle_call
    parts = [ToolCallPart("slow", ARGS_JSON[i], tool_call_id=CALL_IDS[i]) for i in range(N_CALLS)]
    gather = asyncio.gather

    def batch() -> Any:
        return gather(*[handle_call(part) for part in parts])

    _expect_values(await batch(), "pydantic-ai handle_call gather")
    return batch


async def setup_openai_agents() -> Timed:
    try:
        from agents import function_tool, set_tracing_disabled
        from agents.tool_context import ToolContext
    except ImportError as error:
        raise Skip(f"openai-agents not installed ({error})") from None
    set_tracing_disabled(True)
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)
    invoke = function_tool(slow).on_invoke_tool
    pairs: list[tuple[Any, str]] = [
        (
            ToolContext(
                context=None, tool_name="slow", tool_call_id=CALL_IDS[i], tool_arguments=ARGS_JSON[i]
            ),
            ARGS_JSON[i],
        )
        for i in range(N_CALLS)
    ]
    gather = asyncio.gather

    def batch() -> Any:
        return gather(*[invoke(context, args) for context, args in pairs])

    _expect_values(await batch(), "openai-agents on_invoke_tool gather")
    return batch


# --- the table ---------------------------------------------------------------------------------------------

BASELINE = "toolrt/scheduler"
LOGGED = "toolrt/scheduler+log"
FLOOR = "floor/gather"
ANCHORS = ("langgraph", "pydantic-ai", "openai-agents")

CASES = [
    Case(
        BASELINE,
        f"run_tool_calls(100 calls, max_parallel={MAX_PARALLEL}), no callbacks",
        setup_toolrt,
        "toolrt",
        FLOOR,
    ),
    Case(
        LOGGED,
        "run_tool_calls + on_call/on_result → in-memory SessionLog (200 events)",
        setup_toolrt_logged,
        "toolrt",
        FLOOR,
    ),
    Case(FLOOR, "asyncio.gather(100 × slow(i))", setup_floor, "floor"),
    Case(
        "langgraph",
        "StateGraph[ToolNode].ainvoke(AIMessage with 100 tool_calls)",
        setup_langgraph,
        "anchor",
        FLOOR,
        packages=("langgraph", "langchain-core"),
    ),
    Case(
        "pydantic-ai",
        "gather(100 × ToolManager.handle_call(ToolCallPart(json)))",
        setup_pydantic_ai,
        "anchor",
        FLOOR,
        packages=("pydantic-ai-slim",),
    ),
    Case(
        "openai-agents",
        "gather(100 × FunctionTool.on_invoke_tool(ctx, json))",
        setup_openai_agents,
        "anchor",
        FLOOR,
        packages=("openai-agents",),
    ),
]


def verdicts(summaries: Mapping[str, CaseSummary]) -> str:
    """Lines under the table: the target, the logging cost and toolrt's ratio to each anchor."""
    floor = summaries.get(FLOOR)
    if floor is None or not floor.ok:
        return ""
    floor_ns = floor.median_ns

    def per_call(summary: CaseSummary) -> str:
        return f"{format_duration((summary.median_ns - floor_ns) / N_CALLS)}/call above the floor"

    lines = [
        f"- Sampling: a FIXED {BATCH_SAMPLES} timed batches per run after the warm-up (not the time-based "
        "count in the header line).",
        f"- floor: {format_duration(floor_ns)} (reference {REFERENCE_MS[FLOOR]} ms).",
    ]
    base = summaries.get(BASELINE)
    if base is not None and base.ok:
        ratio = base.median_ns / floor_ns
        verdict = "meets" if ratio <= TARGET else "MISSES"
        lines.append(
            f"- toolrt: {format_duration(base.median_ns)} = {ratio:.2f}× the floor "
            f"({per_call(base)}); {verdict} the ≤ {TARGET}× target "
            f"(≤ {format_duration(TARGET * floor_ns)})."
        )
        logged = summaries.get(LOGGED)
        if logged is not None and logged.ok:
            lines.append(
                f"- toolrt + SessionLog: {format_duration(logged.median_ns)} = "
                f"{logged.median_ns / floor_ns:.2f}× the floor; logging adds "
                f"{format_duration(logged.median_ns - base.median_ns)} per batch "
                f"({format_duration((logged.median_ns - base.median_ns) / (2 * N_CALLS))}/event)."
            )
    for name in ANCHORS:
        anchor = summaries.get(name)
        if anchor is None or not anchor.ok:
            continue
        line = (
            f"- {name}: {format_duration(anchor.median_ns)} = {anchor.median_ns / floor_ns:.2f}× the floor "
            f"({per_call(anchor)}; reference {REFERENCE_MS[name]} ms)"
        )
        if base is not None and base.ok:
            line += f"; toolrt = {base.median_ns / anchor.median_ns:.2f}× it"
        lines.append(line + ".")
    return "\n".join(lines)


# --- child mode: the harness's protocol, with a fixed sample count -------------------------------------


def _versions(packages: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def _child(argv: Sequence[str]) -> int:
    """``--case NAME [--json]``: what ``bench_main`` does in a child, but ``BATCH_SAMPLES`` batches."""
    parser = argparse.ArgumentParser(description="one case of benchmarks/scheduler.py")
    parser.add_argument("--case", required=True)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--warmup-s", type=float, default=0.2)
    parser.add_argument("--target-s", type=float, default=1.5, help="ignored: the sample count is fixed")
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args(argv)
    if args.quick:
        args.warmup_s = 0.05
    if str(SRC_DIR) not in sys.path:
        sys.path.insert(0, str(SRC_DIR))
    chosen = next((case for case in CASES if case.name == args.case), None)
    if chosen is None:
        parser.error(f"unknown case {args.case!r}; see --list")
    warmup_s = args.warmup_s
    outcome = asyncio.run(
        run_case_here(
            chosen,
            lambda fn: measure(
                fn, warmup_s=warmup_s, min_samples=BATCH_SAMPLES, max_samples=BATCH_SAMPLES, inner=1
            ),
        )
    )
    return report_child_outcome(chosen.name, outcome, as_json=args.json, unit="batches")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--case" in args:
        return _child(args)
    return bench_main(
        CASES,
        title=(
            f"toolrt scheduler: ONE batch of {N_CALLS} × sleep({SLEEP_S}) tool calls "
            "vs the floor and other tool layers"
        ),
        baseline=BASELINE,
        argv=args,
        skipped_text=BENCH_EXTRA,
        epilogue=verdicts,
    )


if __name__ == "__main__":
    raise SystemExit(main())
