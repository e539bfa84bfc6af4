"""Code Mode end to end: ``run_code`` through toolrt's pipeline into the Python sandbox, beside Monty and
smolagents.

Run by hand (never from the test suite), from the repository root, as root or not::

    .venv/bin/python benchmarks/codemode.py --runs 3              # toolrt (both backends)
    .venv-bench/bin/python benchmarks/codemode.py --runs 3        # ... + Monty and smolagents
    .venv-bench/bin/python benchmarks/codemode.py --only bwrap --quick   # smoke test, not a measurement

The anchors need ``pydantic-monty`` and ``smolagents`` in the bench venv (``.venv-bench/bin/pip install
pydantic-monty smolagents``); without them they print as skipped. A backend that does not work here
(no bwrap, no Landlock) fails its cases with the runtime's reason.

What is timed — one ``runtime.execute(ToolExecutionInput(name="run_code", arguments={"code": ...,
"description": ...}))`` on ``ToolRuntime(mode="code", code_runtime=PythonSandboxRuntime(backend=B))``
with one registered async tool ``add(a: int, b: int) -> int``, for B = ``bwrap`` and ``landlock``:

- ``trivial``: ``return 1``. Warm: ``pool_size=2`` (the default); before every timed run the script
  awaits ``code_runtime.warm()`` **outside the timed region** (the run consumed a child; the refill
  starts when a run ends and takes ~40 ms), so each run gets a booted, confined, idle child and no
  refill competes with it. Cold: ``pool_size=0`` (spawn, confine, run, reap — all timed).
- ``100 calls``: ``total = 0; for i in range(100): total += await tools.add({"a": i, "b": 1});
  print(total)``, warm as above. Every call re-enters the full pipeline through the Code Mode bridge.
- ``per binding`` (derived): (``1000 calls`` − ``1000-iteration loop`` doing ``total += i + 1``) / 1000,
  both warm, from the per-run medians (the median of the per-run differences).

Floors and parts (``_codemode_floors.py``): the standard-library floor of each toolrt case (its "vs
floor" column) — N sequential call→reply frames between a child and an asyncio host; starting a bare
``python -I -S`` and reaping it; a running child (asyncio imported) answering once, exiting and being
reaped — and ``toolrt[B]/N-calls-raw``, the sandbox alone with a plain binding and no pipeline. The
last block of the report splits one binding call into the floor, the sandbox and the pipeline, each
derived as (1000-call − 100-call) / 900.

Anchors, same programs (``add(a=i, b=1)`` keyword calls):

- pydantic-monty: an ``AsyncMonty(min_processes=1, max_processes=1)`` pool entered once; each sample is
  ``async with pool.checkout(...)`` + ``feed_run(program, external_lookup={"add": async add})``, so the
  program ``await``s an async host function. Its worker process is reused across checkouts (a fresh
  session, not a fresh process). Per async host call is derived as above.
- smolagents: one ``LocalPythonExecutor([])`` with ``send_tools({"add": Tool})``, reused; it runs the
  program in the host process with an AST interpreter — **no isolation** — and calls a sync tool.

Before timing, every path must produce 5050 (100 calls) or 500500 (1000 calls / loop) and toolrt must
report the backend asked for. Method: ``_harness.py`` (one child process per case per run, ``--runs``
times interleaved; median of per-run medians, median of per-run p95s), except that each sample may be
preceded by an untimed pause (the pool refill) and the sample count is budgeted on the whole sample
(pause included): ``--target-s`` seconds, at least 40 samples (contract BM3).
"""

import asyncio
import statistics
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from _codemode_floors import FLOOR_CASES, PROGRAM_CALLS, raw_cases
from _harness import (
    Case,
    CaseSummary,
    Paced,
    Skip,
    Stats,
    Timed,
    bench_main,
    format_duration,
    measure_paced,
    parse_child_args,
    report_child_outcome,
    run_case_here,
)

BACKENDS = ("bwrap", "landlock")
PROGRAM_LOOP = "total = 0\nfor i in range({n}):\n    total += i + 1\nprint(total)"
ANCHOR_CALLS = "total = 0\nfor i in range({n}):\n    total += {aw}add(a=i, b=1)\nprint(total)"
BENCH_EXTRA = "skipped (.venv-bench/bin/pip install pydantic-monty smolagents)"
MIN_SAMPLES = 40
QUICK_MIN_SAMPLES = 8  # --quick (target_s < 1): a smoke test
MAX_SAMPLES = 3000

TARGET_WARM_TRIVIAL_NS = 5e6
TARGET_COLD_TRIVIAL_NS = 60e6
TARGET_PER_BINDING_NS = 120e3
TARGET_100_CALLS_NS = 15e6


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


# --- toolrt ------------------------------------------------------------------------------------------------


async def _toolrt(
    backend: str, *, warm: bool, program: str, expect: str | None, value: Any = None, language: str = "python"
) -> Timed:
    from toolrt import AbortSignal, ToolExecutionInput, ToolRuntime, tool
    from toolrt.sandbox import DenoTypeScriptRuntime, PythonSandboxRuntime

    runtime_class: Any = PythonSandboxRuntime
    if language == "typescript":
        try:
            import deno  # noqa: F401 (the typescript extra)
        except ImportError as error:
            raise Skip(f"the typescript extra is not installed ({error})") from None
        runtime_class = DenoTypeScriptRuntime
    code_runtime = runtime_class(backend=backend, pool_size=2 if warm else 0)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    runtime.register(tool(add))
    signal = AbortSignal()
    call = ToolExecutionInput(
        call_id="bench",
        name="run_code",
        arguments={"code": program, "description": "benchmark"},
        signal=signal,
    )
    if warm:
        await code_runtime.warm()
    checked = await runtime.execute(call)
    _expect(not checked.is_error, f"toolrt[{backend}] failed: {checked!r}")
    meta = checked.meta or {}
    _expect(meta.get("backend") == backend, f"toolrt ran on {meta.get('backend')!r}, not {backend!r}: {meta}")
    _expect(meta.get("warm") is warm, f"toolrt[{backend}] warm={meta.get('warm')!r}, expected {warm}")
    got = getattr(checked, "value", None) or {}
    logs = [] if expect is None else [expect]
    _expect(got.get("logs") == logs, f"toolrt[{backend}] printed {got!r}, expected {logs!r}")
    if value is not None:
        _expect(got.get("result") == value, f"toolrt[{backend}] returned {got!r}, expected {value!r}")
    execute = runtime.execute

    async def once() -> None:
        result = await execute(call)
        if result.is_error or (result.meta or {}).get("warm") is not warm:
            raise AssertionError(f"toolrt[{backend}] sample went wrong: {result!r}")

    if not warm:
        return once

    async def refilled() -> None:
        await code_runtime.warm()

    return Paced(once, refilled)


# The TypeScript runtime's programs: the same work as Python's, in TypeScript.
TS_LOOP = "let total = 0;\nfor (let i = 0; i < {n}; i++) total += i + 1;\nconsole.log(total);"
TS_CALLS = (
    "let total = 0;\nfor (let i = 0; i < {n}; i++) total += await tools.add({{a: i, b: 1}});\n"
    "console.log(total);"
)


def _toolrt_cases(backend: str, language: str = "python") -> list[Case]:
    def setup(
        warm: bool, program: str, expect: str | None, value: Any = None
    ) -> Callable[[], Awaitable[Timed]]:
        async def make() -> Timed:
            return await _toolrt(
                backend, warm=warm, program=program, expect=expect, value=value, language=language
            )

        return make

    typescript = language == "typescript"
    calls, loop = (TS_CALLS, TS_LOOP) if typescript else (PROGRAM_CALLS, PROGRAM_LOOP)
    group = f"toolrt-ts[{backend}]" if typescript else f"toolrt[{backend}]"
    return [
        Case(
            f"{group}/trivial-warm",
            "run_code `return 1`, warm pool",
            setup(True, "return 1", None, 1),
            group,
            floor="floor/warm-exit",
        ),
        Case(
            f"{group}/trivial-cold",
            "run_code `return 1`, pool_size=0",
            setup(False, "return 1", None, 1),
            group,
            floor="floor/spawn-exit",
        ),
        Case(
            f"{group}/100-calls-warm",
            "run_code 100 sequential `await tools.add`, warm",
            setup(True, calls.format(n=100), "5050"),
            group,
            floor="floor/100-round-trips",
        ),
        Case(
            f"{group}/1000-calls-warm",
            "run_code 1000 sequential `await tools.add`, warm",
            setup(True, calls.format(n=1000), "500500"),
            group,
            floor="floor/1000-round-trips",
        ),
        Case(
            f"{group}/1000-loop-warm",
            "run_code 1000-iteration loop, no call, warm",
            setup(True, loop.format(n=1000), "500500"),
            group,
        ),
        *([] if typescript else raw_cases(backend)),
    ]


# --- anchors ------------------------------------------------------------------------------------------------


def _monty_setup(program: str, expect: str) -> Callable[[], Awaitable[Timed]]:
    async def make() -> Timed:
        try:
            import pydantic_monty
        except ImportError as error:
            raise Skip(f"pydantic-monty not installed ({error})") from None
        pool: Any = pydantic_monty.AsyncMonty(min_processes=1, max_processes=1)
        await pool.__aenter__()  # kept open until the process exits
        limits: Any = {"max_suspensions": 5000}
        lookup = {"add": add}

        async def once() -> str:
            output = pydantic_monty.CollectString()
            async with pool.checkout(limits=limits) as session:
                await session.feed_run(program, external_lookup=lookup, print_callback=output)
            return str(output.output)

        got = await once()
        _expect(got.strip() == expect, f"monty printed {got!r}, expected {expect!r}")
        return once

    return make


def _smolagents_setup(program: str, expect: str) -> Callable[[], Awaitable[Timed]]:
    async def make() -> Timed:
        try:
            from smolagents import tool as smol_tool
            from smolagents.local_python_executor import LocalPythonExecutor
        except ImportError as error:
            raise Skip(f"smolagents not installed ({error})") from None

        def add_sync(a: int, b: int) -> int:
            """Add two integers.

            Args:
                a: The first integer.
                b: The second integer.
            """
            return a + b

        add_sync.__name__ = "add"
        executor = LocalPythonExecutor([])
        executor.send_tools({"add": smol_tool(add_sync)})
        result = executor(program)
        _expect(
            str(result.logs).strip() == expect, f"smolagents printed {result.logs!r}, expected {expect!r}"
        )
        return lambda: executor(program)

    return make


ANCHOR_CASES = [
    Case(
        "monty/100-calls-warm",
        "AsyncMonty warm pool: checkout + 100 `await add` (async host fn)",
        _monty_setup(ANCHOR_CALLS.format(n=100, aw="await "), "5050"),
        "anchor",
        packages=("pydantic-monty",),
    ),
    Case(
        "monty/1000-calls-warm",
        "AsyncMonty warm pool: checkout + 1000 `await add`",
        _monty_setup(ANCHOR_CALLS.format(n=1000, aw="await "), "500500"),
        "anchor",
        packages=("pydantic-monty",),
    ),
    Case(
        "monty/1000-loop-warm",
        "AsyncMonty warm pool: checkout + 1000-iteration loop, no call",
        _monty_setup(PROGRAM_LOOP.format(n=1000), "500500"),
        "anchor",
        packages=("pydantic-monty",),
    ),
    Case(
        "smolagents/100-calls",
        "LocalPythonExecutor (reused, NO isolation): 100 `add(...)` (sync tool)",
        _smolagents_setup(ANCHOR_CALLS.format(n=100, aw=""), "5050"),
        "anchor",
        packages=("smolagents",),
    ),
]

CASES = [
    *FLOOR_CASES,
    *(case for backend in BACKENDS for case in _toolrt_cases(backend)),
    *(case for backend in BACKENDS for case in _toolrt_cases(backend, "typescript")),
    *ANCHOR_CASES,
]
TARGET_TS_WARM_RATIO = 1.5
TARGET_TS_PER_BINDING_RATIO = 1.2


# --- the child: paced sampling ------------------------------------------------------------------------------


def child_main(argv: Sequence[str]) -> int:
    """``--case NAME [--json] [--warmup-s S] [--target-s S]``: one case in this process."""
    case, args = parse_child_args(argv, CASES)
    sys.path.insert(0, str(_src_dir()))
    warmup_s, target_s = args.warmup_s, args.target_s

    def sample(fn: Timed) -> Awaitable[Stats]:
        return measure_paced(
            fn,
            warmup_s=warmup_s,
            target_s=target_s,
            min_samples=MIN_SAMPLES,
            quick_min_samples=QUICK_MIN_SAMPLES,
            max_samples=MAX_SAMPLES,
        )

    outcome = asyncio.run(run_case_here(case, sample))
    return report_child_outcome(args.case, outcome, as_json=args.json, unit="samples")


def _src_dir() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parent.parent / "src"


# --- the verdicts -------------------------------------------------------------------------------------------


def _derived(
    summaries: Mapping[str, CaseSummary], calls: str, loop: str, n: int
) -> tuple[float, float] | None:
    """(median of per-run (calls − loop) medians, (p95 calls − p95 loop)) / n, in ns."""
    a, b = summaries.get(calls), summaries.get(loop)
    if a is None or b is None or not a.ok or not b.ok:
        return None
    differences = [(x.median_ns - y.median_ns) / n for x, y in zip(a.runs, b.runs, strict=False)]
    return statistics.median(differences), (a.p95_ns - b.p95_ns) / n


def _isolation_lines() -> list[str]:
    sys.path.insert(0, str(_src_dir()))
    try:
        from toolrt.sandbox import PythonSandboxRuntime
    except ImportError:
        return []
    lines = []
    for backend in BACKENDS:
        report = PythonSandboxRuntime(backend=backend, pool_size=0).isolation  # type: ignore[arg-type]
        notes = [note for note in report.notes if note.startswith(("child interpreter", "uid drop skipped"))]
        extra = f"; {notes[0]}" if notes else ""
        lines.append(
            f"- isolation[{backend}]: {report.enforcement}, layers {', '.join(report.layers)}{extra}"
        )
    return lines


def verdicts(summaries: Mapping[str, CaseSummary]) -> str:
    """The targets table (p50 = median of per-run medians) and the derived per-call rows."""

    def cell(name: str) -> tuple[str, float | None]:
        summary = summaries.get(name)
        if summary is None or not summary.ok:
            return "—", None
        return (
            f"{format_duration(summary.median_ns)} (p95 {format_duration(summary.p95_ns)})",
            summary.median_ns,
        )

    def verdict(value: float | None, target: float) -> str:
        return "—" if value is None else ("meets" if value <= target else "MISSES")

    rows = [
        "| metric | target (p50) | " + " | ".join(f"toolrt {b}" for b in BACKENDS) + " |",
        "| --- | ---: | " + " | ".join("---" for _ in BACKENDS) + " |",
    ]
    metrics = [
        ("warm trivial `return 1`", "trivial-warm", TARGET_WARM_TRIVIAL_NS),
        ("cold trivial `return 1`", "trivial-cold", TARGET_COLD_TRIVIAL_NS),
        ("100-call program, warm", "100-calls-warm", TARGET_100_CALLS_NS),
    ]
    for label, suffix, target in metrics:
        cells = []
        for backend in BACKENDS:
            text, value = cell(f"toolrt[{backend}]/{suffix}")
            cells.append(f"{text} — {verdict(value, target)}")
        rows.append(f"| {label} | ≤ {format_duration(target)} | " + " | ".join(cells) + " |")
    cells = []
    for backend in BACKENDS:
        group = f"toolrt[{backend}]"
        derived = _derived(summaries, f"{group}/1000-calls-warm", f"{group}/1000-loop-warm", 1000)
        if derived is None:
            cells.append("—")
        else:
            cells.append(
                f"{format_duration(derived[0])} (from p95s {format_duration(derived[1])}) — "
                f"{verdict(derived[0], TARGET_PER_BINDING_NS)}"
            )
    rows.append(
        f"| per binding call (1000 calls − 1000 loop) / 1000 | ≤ {format_duration(TARGET_PER_BINDING_NS)} | "
        + " | ".join(cells)
        + " |"
    )
    lines = ["Targets:", "", *rows, ""]
    monty = _derived(summaries, "monty/1000-calls-warm", "monty/1000-loop-warm", 1000)
    if monty is not None:
        lines.append(
            f"- monty per async host call (1000 calls − 1000 loop) / 1000: {format_duration(monty[0])} "
            f"(from p95s {format_duration(monty[1])})."
        )
    for name in ("monty/100-calls-warm", "smolagents/100-calls"):
        text, _ = cell(name)
        if text != "—":
            lines.append(f"- {name}: {text}.")
    lines.extend(["", *_typescript_lines(summaries), ""])
    lines.extend(["", *_decomposition(summaries), ""])
    lines.extend(_isolation_lines())
    return "\n".join(lines)


def _typescript_lines(summaries: Mapping[str, CaseSummary]) -> list[str]:
    """The TypeScript runtime against the Python one, same backend, same interleaved runs."""
    lines = ["TypeScript on Deno vs Python (ratios of p50s; targets: warm ≤ 1.5×, per binding ≤ 1.2×):", ""]
    for backend in BACKENDS:
        py, ts = f"toolrt[{backend}]", f"toolrt-ts[{backend}]"
        parts = []
        for suffix in ("trivial-warm", "trivial-cold", "100-calls-warm"):
            a, b = summaries.get(f"{py}/{suffix}"), summaries.get(f"{ts}/{suffix}")
            if a is None or b is None or not a.ok or not b.ok:
                parts.append(f"{suffix} —")
                continue
            ratio = b.median_ns / a.median_ns
            mark = ""
            if suffix == "trivial-warm":
                mark = " meets" if ratio <= TARGET_TS_WARM_RATIO else " MISSES"
            parts.append(f"{suffix} {format_duration(b.median_ns)} = {ratio:.2f}×{mark}")
        one = _derived(summaries, f"{py}/1000-calls-warm", f"{py}/1000-loop-warm", 1000)
        other = _derived(summaries, f"{ts}/1000-calls-warm", f"{ts}/1000-loop-warm", 1000)
        if one is not None and other is not None and one[0] > 0:
            ratio = other[0] / one[0]
            mark = "meets" if ratio <= TARGET_TS_PER_BINDING_RATIO else "MISSES"
            parts.append(f"per binding {format_duration(other[0])} = {ratio:.2f}× {mark}")
        lines.append(f"- {backend}: " + "; ".join(parts))
    return lines


def _decomposition(summaries: Mapping[str, CaseSummary]) -> list[str]:
    """One binding call, every family derived the same way: (1000-call − 100-call) / 900, as the
    median of the per-run differences (like the per-binding row of the targets)."""

    def per_call(short: str, long: str) -> float | None:
        derived = _derived(summaries, long, short, 900)
        return None if derived is None else derived[0]

    floor = per_call("floor/100-round-trips", "floor/1000-round-trips")

    def shown(value: float | None) -> str:
        if value is None:
            return "—"
        ratio = f" ({value / floor:.2f}× floor)" if floor else ""
        return format_duration(value) + ratio

    lines = [
        "One binding call, (1000-call − 100-call) / 900 for every family:",
        "",
        f"- stdlib floor (asyncio host answering a child's frames): {shown(floor)}",
    ]
    for backend in BACKENDS:
        group = f"toolrt[{backend}]"
        raw = per_call(f"{group}/100-calls-raw", f"{group}/1000-calls-raw")
        full = per_call(f"{group}/100-calls-warm", f"{group}/1000-calls-warm")
        pipeline = f"; the pipeline's share {format_duration(full - raw)}" if full and raw else ""
        lines.append(f"- {group}: sandbox only {shown(raw)}; through run_code {shown(full)}{pipeline}")
    monty = per_call("monty/100-calls-warm", "monty/1000-calls-warm")
    if monty is not None:
        lines.append(f"- monty: {shown(monty)}")
    return lines


if __name__ == "__main__":
    if "--case" in sys.argv[1:]:
        raise SystemExit(child_main(sys.argv[1:]))
    raise SystemExit(
        bench_main(
            CASES,
            title="Code Mode: run_code end to end (pipeline → Python sandbox) vs Monty and smolagents",
            skipped_text=BENCH_EXTRA,
            epilogue=verdicts,
        )
    )
