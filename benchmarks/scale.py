"""How toolrt's costs grow with size: growth curves printed as ratios (issue 18, decision 0012).

Run by hand (never from the test suite), from the repository root::

    .venv/bin/python benchmarks/scale.py --runs 3              # every family
    .venv/bin/python benchmarks/scale.py --runs 3 --pinned     # the same, re-run under taskset -c 1
    .venv/bin/python benchmarks/scale.py --only tools/ --quick # smoke test, not a measurement
    .venv/bin/python benchmarks/scale.py --list

Families (each prints its cases, then its curve as ratios against the target):

- **tools** — a catalogue of 10 / 100 / 1,000 realistic tools (half ``@tool`` functions with typed
  hints, defaults, ``Literal``, optionals and an ``Args:`` docstring; half ``define_tool`` tools with
  nested DSL schemas), built once per child, untimed. ``register``: every tool into a fresh
  ``ToolRuntime`` (target: ≤ 50 ms at 1,000). ``assemble-first``: the first
  ``SystemPrompt.assemble()`` of a freshly connected prompt, with ``render()`` and the tool list the
  agent sends; ``assemble-repeat``: the same on a prompt that has assembled before and a runtime that
  has not changed (target: repeat ≤ 5 % of first), each ``native`` and ``code`` (a
  ``PythonSandboxRuntime``, so the Python SDK is rendered; no child process is started).
- **log** — a session log of 10,000 / 30,000 events of realistic turns (a user message, two tool
  calls with their results, usage, a closing message), written once per parent run. ``reopen``:
  ``SessionLog.resume(path)`` plus ``messages()`` (target: 30k ≤ 3.3 × 10k); ``json-floor``: reading
  the file and ``json.loads`` of every line, the floor any validating reader pays.
- **import** — ``import toolrt`` against ``import asyncio``, each timed inside a fresh interpreter
  (``time.perf_counter_ns`` around the import statement), with bytecode caches warm in a private
  ``PYTHONPYCACHEPREFIX`` (the repository's environment sets ``PYTHONDONTWRITEBYTECODE``, which
  would otherwise time the compiler on every edited module). Target: ≤ 1.5 × asyncio.

Method (contract BM1's, adapted to samples of milliseconds): every case runs in its own child
process (``python benchmarks/scale.py --case NAME --json``), the whole set ``--runs`` times
interleaved (run 1 of every case, then run 2, ...); each child takes a fixed number of samples after
a warm-up, one operation per sample, GC enabled. Tables show the median of the per-run medians, the
median of the per-run p95s, and the spread (max − min) / median of the per-run medians; the ratios
divide medians. ``--pinned`` re-executes the whole script under ``taskset -c 1`` (children inherit
the affinity), for figures that would otherwise be bimodal on a shared 2-core machine.

**Adding a family** (concurrent ``run_code`` runs, host ballast for cold starts, ...): build its
:class:`ScaleCase` list and a ``report`` that turns the summaries into ratio lines, and register it
with :func:`register_family`; ``--only NAME/`` then selects it, and the driver, the child protocol
and the tables need nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _harness import (
    SRC_DIR,
    Case,
    CaseSummary,
    RunOutcome,
    Stats,
    format_duration,
    format_table,
    run_cases_in_subprocesses,
)

Sampler = Callable[[], int]
"""One sample: does its own untimed preparation, returns the timed part in nanoseconds."""


@dataclass(frozen=True, slots=True)
class ScaleCase:
    """One timed operation at one size. ``setup(options)`` runs in the child and returns the sampler;
    ``samples`` is how many a child takes after ``warmup`` untimed ones (``--quick`` takes fewer)."""

    name: str
    label: str
    setup: Callable[[argparse.Namespace], Sampler]
    samples: int
    warmup: int = 1


@dataclass(frozen=True, slots=True)
class Family:
    """A growth curve: its cases and how the summaries read as ratios (one line each)."""

    name: str
    title: str
    cases: tuple[ScaleCase, ...]
    report: Callable[[Mapping[str, CaseSummary]], list[str]]


FAMILIES: dict[str, Family] = {}
"""Every family, by name, in the order they print."""


def register_family(family: Family) -> Family:
    """Add ``family`` to :data:`FAMILIES` (its case names must start with ``family.name + "/"``)."""
    for case in family.cases:
        if not case.name.startswith(family.name + "/"):
            raise ValueError(f"case {case.name!r} is not named under its family {family.name!r}")
    FAMILIES[family.name] = family
    return family


def _median(summaries: Mapping[str, CaseSummary], name: str) -> float | None:
    summary = summaries.get(name)
    return summary.median_ns if summary is not None and summary.ok else None


def _ratio(summaries: Mapping[str, CaseSummary], top: str, bottom: str) -> str:
    numerator, denominator = _median(summaries, top), _median(summaries, bottom)
    if numerator is None or denominator is None or denominator <= 0:
        return "n/a"
    return f"{numerator / denominator:.2f}×"


def _percent(summaries: Mapping[str, CaseSummary], top: str, bottom: str) -> str:
    numerator, denominator = _median(summaries, top), _median(summaries, bottom)
    if numerator is None or denominator is None or denominator <= 0:
        return "n/a"
    return f"{100 * numerator / denominator:.1f} %"


# --- tools: register and assemble at 10 / 100 / 1,000 tools ---------------------------------------

TOOL_COUNTS = (10, 100, 1000)

_TOOL_SOURCE = '''
async def {name}(query: str, limit: int = 10, tags: list[str] | None = None,
                 mode: Literal["fast", "exhaustive"] = "fast", since: datetime.date | None = None,
                 options: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Search the {noun} index for matching records.

    Args:
        query: What to look for, in the index's query syntax.
        limit: How many results to return at most.
        tags: Only records carrying every one of these tags.
        mode: How hard to search.
        since: Only records changed on or after this day.
        options: Extra index-specific options.
    """
    return []
'''


def realistic_tools(count: int) -> list[Any]:
    """``count`` distinct tools, half ``@tool`` functions and half ``define_tool`` ones."""
    import datetime
    from typing import Literal

    from toolrt import define_tool, tool

    namespace: dict[str, Any] = {"Literal": Literal, "datetime": datetime}
    tools: list[Any] = []
    for index in range(count):
        if index % 2 == 0:
            name = f"search_{index}"
            # One real function per tool, with its own annotations and docstring, as a catalogue has.
            exec(textwrap.dedent(_TOOL_SOURCE.format(name=name, noun=f"kind-{index}")), namespace)
            tools.append(tool(namespace[name]))
        else:
            tools.append(
                define_tool(
                    name=f"update_{index}",
                    description=f"Update a record of kind {index}; only the fields given change.",
                    parameters={
                        "id": {"type": "string", "required": True, "description": "The record's id."},
                        "title": {"type": "string", "description": "The new title."},
                        "count": {"type": "integer", "description": "The new count."},
                        "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels."},
                        "owner": {
                            "type": "object",
                            "additionalProperties": False,
                            "description": "Who owns the record.",
                            "properties": {
                                "id": {"type": "string", "required": True},
                                "email": {"type": "string"},
                            },
                        },
                        "state": {"type": "string", "enum": ["open", "closed", "archived"]},
                    },
                    output={"schema": {"type": "string"}},
                    execute=lambda args, ctx: "updated",
                )
            )
    return tools


def _setup_register(count: int) -> Callable[[argparse.Namespace], Sampler]:
    def setup(_options: argparse.Namespace) -> Sampler:
        from toolrt import ToolRuntime

        tools = realistic_tools(count)

        def sample() -> int:
            runtime = ToolRuntime()
            register = runtime.register
            started = time.perf_counter_ns()
            for definition in tools:
                register(definition)
            elapsed = time.perf_counter_ns() - started
            assert len(runtime.visible_tools()) == count
            runtime.close()
            return elapsed

        return sample

    return setup


def _connected(tools: Sequence[Any], mode: str) -> tuple[Any, Any]:
    from toolrt import ToolRuntime
    from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain

    if mode == "code":
        from toolrt.sandbox import PythonSandboxRuntime

        runtime = ToolRuntime(mode="code", code_runtime=PythonSandboxRuntime())
    else:
        runtime = ToolRuntime()
    for definition in tools:
        runtime.register(definition)
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    prompt.section("persona", 0, "You are a careful engineer.")
    return runtime, prompt


def _step(loop: asyncio.AbstractEventLoop, prompt: Any) -> tuple[str, tuple[Any, ...]]:
    """What an agent does at every model step: assemble, render, take the tool list."""
    assembly = loop.run_until_complete(prompt.assemble())
    return assembly.render(), tuple(assembly.tools)


def _setup_assemble(count: int, mode: str, *, repeat: bool) -> Callable[[argparse.Namespace], Sampler]:
    def setup(_options: argparse.Namespace) -> Sampler:
        tools = realistic_tools(count)
        loop = asyncio.new_event_loop()
        expected_tools = 1 if mode == "code" else count
        if repeat:
            _runtime, prompt = _connected(tools, mode)
            _step(loop, prompt)

            def sample_repeat() -> int:
                started = time.perf_counter_ns()
                _text, schemas = _step(loop, prompt)
                elapsed = time.perf_counter_ns() - started
                assert len(schemas) == expected_tools
                return elapsed

            return sample_repeat

        def sample_first() -> int:
            runtime, prompt = _connected(tools, mode)
            started = time.perf_counter_ns()
            _text, schemas = _step(loop, prompt)
            elapsed = time.perf_counter_ns() - started
            assert len(schemas) == expected_tools
            runtime.close()
            return elapsed

        return sample_first

    return setup


def _report_tools(summaries: Mapping[str, CaseSummary]) -> list[str]:
    lines = [
        "register, growth: 100/10 = "
        + _ratio(summaries, "tools/register/100", "tools/register/10")
        + ", 1000/100 = "
        + _ratio(summaries, "tools/register/1000", "tools/register/100")
        + " (linear: 10×)"
    ]
    at_1000 = _median(summaries, "tools/register/1000")
    if at_1000 is not None:
        lines.append(f"register 1,000 tools: {format_duration(at_1000)} (target ≤ 50 ms)")
    for mode in ("native", "code"):
        shares = ", ".join(
            f"{count}: "
            + _percent(
                summaries, f"tools/assemble-repeat/{mode}/{count}", f"tools/assemble-first/{mode}/{count}"
            )
            for count in TOOL_COUNTS
        )
        lines.append(f"assemble {mode}, repeat / first: {shares} (target ≤ 5 % at 1,000)")
    return lines


register_family(
    Family(
        name="tools",
        title="Tools: register and assemble at 10 / 100 / 1,000 tools",
        cases=(
            *(
                ScaleCase(f"tools/register/{count}", f"register {count} tools", _setup_register(count), 30, 2)
                for count in TOOL_COUNTS
            ),
            *(
                ScaleCase(
                    f"tools/assemble-{kind}/{mode}/{count}",
                    f"{kind} assembly, {mode}, {count} tools",
                    _setup_assemble(count, mode, repeat=kind == "repeat"),
                    40 if kind == "repeat" else 8,
                    2,
                )
                for mode in ("native", "code")
                for count in TOOL_COUNTS
                for kind in ("first", "repeat")
            ),
        ),
        report=_report_tools,
    )
)


# --- log: reopen 10,000 / 30,000 events, against the json.loads floor ----------------------------

LOG_SIZES = {"10k": 10_000, "30k": 30_000}


def write_log(path: Path, events: int) -> None:
    """A realistic session of at least ``events`` events at ``path`` (replaced if present)."""
    from toolrt import ToolSuccess
    from toolrt.loop import (
        SessionLog,
        model_assistant_event,
        model_user_event,
        tool_call_event,
        tool_result_event,
        turn_end_event,
        turn_start_event,
    )
    from toolrt.loop._messages import AssistantMessage, ToolCall, Usage

    path.unlink(missing_ok=True)
    with SessionLog.create(path) as log:
        turn = 0
        while len(log) < events:
            log.append(*turn_start_event(turn, agent="main"))
            log.append(*model_user_event(f"Summarise src/module_{turn}.py and check its tests."))
            calls = (
                ToolCall(
                    f"c{turn}a", "read_file", json.dumps({"path": f"src/module_{turn}.py", "limit": 200})
                ),
                ToolCall(f"c{turn}b", "grep", json.dumps({"pattern": "def test_", "path": "tests"})),
            )
            log.append(
                *model_assistant_event(
                    AssistantMessage("Reading.", calls, None, "tool_calls"), Usage(900, 40)
                )
            )
            for call in calls:
                log.append(*tool_call_event(call.id, call.name, call.arguments, json.loads(call.arguments)))
            for call in calls:
                content = [{"type": "text", "text": "def f(x):\n    return x + 1\n" * 6}]
                log.append(*tool_result_event(call.id, call.name, ToolSuccess(value=None, content=content)))
            log.append(
                *model_assistant_event(
                    AssistantMessage(f"Module {turn} is fine.", (), None, "stop"), Usage(950, 12)
                )
            )
            log.append(*turn_end_event("stop", turn=turn))
            turn += 1


def _log_path(options: argparse.Namespace, size: str) -> Path:
    return Path(options.log_dir) / f"session-{size}.jsonl"


def _setup_reopen(size: str) -> Callable[[argparse.Namespace], Sampler]:
    def setup(options: argparse.Namespace) -> Sampler:
        from toolrt.loop import SessionLog

        path = _log_path(options, size)

        def sample() -> int:
            started = time.perf_counter_ns()
            log = SessionLog.resume(path)
            messages = log.messages()
            elapsed = time.perf_counter_ns() - started
            assert len(log) >= LOG_SIZES[size] and messages
            log.close()
            return elapsed

        return sample

    return setup


def _setup_json_floor(size: str) -> Callable[[argparse.Namespace], Sampler]:
    def setup(options: argparse.Namespace) -> Sampler:
        path = _log_path(options, size)

        def sample() -> int:
            started = time.perf_counter_ns()
            records = [json.loads(line) for line in path.read_bytes().split(b"\n") if line]
            elapsed = time.perf_counter_ns() - started
            assert len(records) >= LOG_SIZES[size]
            return elapsed

        return sample

    return setup


def _report_log(summaries: Mapping[str, CaseSummary]) -> list[str]:
    return [
        "reopen, growth: 30k/10k = "
        + _ratio(summaries, "log/reopen/30k", "log/reopen/10k")
        + " (target ≤ 3.3×)",
        "json.loads floor, growth: 30k/10k = "
        + _ratio(summaries, "log/json-floor/30k", "log/json-floor/10k"),
        "reopen / floor: 10k = "
        + _ratio(summaries, "log/reopen/10k", "log/json-floor/10k")
        + ", 30k = "
        + _ratio(summaries, "log/reopen/30k", "log/json-floor/30k"),
    ]


register_family(
    Family(
        name="log",
        title="Session log: reopen 10,000 / 30,000 events",
        cases=tuple(
            case
            for size in LOG_SIZES
            for case in (
                ScaleCase(
                    f"log/reopen/{size}", f"resume + messages(), {size} events", _setup_reopen(size), 7
                ),
                ScaleCase(
                    f"log/json-floor/{size}",
                    f"read + json.loads per line, {size}",
                    _setup_json_floor(size),
                    7,
                ),
            )
        ),
        report=_report_log,
    )
)


# --- import: `import toolrt` against `import asyncio` ---------------------------------------------


def _import_env(options: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(options.log_dir) / "pycache")
    parts = [str(SRC_DIR), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    return env


def _setup_import(module: str) -> Callable[[argparse.Namespace], Sampler]:
    def setup(options: argparse.Namespace) -> Sampler:
        env = _import_env(options)
        program = (
            f"import time; t = time.perf_counter_ns(); import {module}; print(time.perf_counter_ns() - t)"
        )

        def sample() -> int:
            done = subprocess.run(
                [sys.executable, "-c", program],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            )
            return int(done.stdout.split()[-1])

        return sample

    return setup


def _report_import(summaries: Mapping[str, CaseSummary]) -> list[str]:
    return [
        "import toolrt / import asyncio = "
        + _ratio(summaries, "import/toolrt", "import/asyncio")
        + " (target ≤ 1.5×)"
    ]


register_family(
    Family(
        name="import",
        title="Import: `import toolrt` against `import asyncio`",
        cases=(
            ScaleCase("import/asyncio", "import asyncio, fresh interpreter", _setup_import("asyncio"), 15, 2),
            ScaleCase("import/toolrt", "import toolrt, fresh interpreter", _setup_import("toolrt"), 15, 2),
        ),
        report=_report_import,
    )
)


# --- the child and the driver ------------------------------------------------------------------------


def _stats(samples_ns: Sequence[int]) -> Stats:
    ordered = sorted(samples_ns)
    rank = max(1, math.ceil(0.95 * len(ordered)))
    return Stats(
        median_ns=statistics.median(ordered),
        p95_ns=ordered[rank - 1],
        mean_ns=statistics.fmean(ordered),
        min_ns=ordered[0],
        samples=len(ordered),
        inner=1,
    )


def _all_cases() -> dict[str, ScaleCase]:
    return {case.name: case for family in FAMILIES.values() for case in family.cases}


def run_child(options: argparse.Namespace) -> int:
    """Child mode: set one case up, warm it up, sample it, print a RunOutcome JSON line."""
    if str(SRC_DIR) not in sys.path:
        sys.path.insert(0, str(SRC_DIR))
    case = _all_cases()[options.case]
    try:
        sample = case.setup(options)
        for _ in range(case.warmup):
            sample()
        count = max(3, case.samples // 4) if options.quick else case.samples
        outcome = RunOutcome(case.name, "ok", _stats([sample() for _ in range(count)]))
    except Exception as error:
        outcome = RunOutcome(case.name, "error", reason=f"{type(error).__name__}: {error}")
    print(outcome.to_json())
    return 0 if outcome.status == "ok" else 1


def _reexec_pinned(argv: Sequence[str]) -> int:
    if os.environ.get("TOOLRT_SCALE_PINNED") == "1":
        return -1  # already pinned: carry on in this process
    taskset = shutil.which("taskset")
    if taskset is None:
        print("scale.py: --pinned needs taskset (util-linux)", file=sys.stderr)
        return 2
    env = dict(os.environ, TOOLRT_SCALE_PINNED="1")
    return subprocess.run(
        [taskset, "-c", "1", sys.executable, __file__, *argv], env=env, check=False
    ).returncode


def main(argv: Sequence[str] | None = None) -> int:
    """Parent mode (default): run the selected families' cases interleaved and print the curves."""
    parser = argparse.ArgumentParser(description="toolrt growth curves, as ratios")
    parser.add_argument("--case", help="(child mode) run this one case")
    parser.add_argument("--json", action="store_true", help="(child mode) print the outcome as JSON")
    parser.add_argument("--log-dir", help="(child mode) where the parent wrote the session logs")
    parser.add_argument("--runs", type=int, default=3, help="interleaved repetitions (default 3)")
    parser.add_argument("--only", action="append", default=[], help="run only cases containing this")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--quick", action="store_true", help="a quarter of the samples (a smoke test)")
    parser.add_argument("--pinned", action="store_true", help="re-run everything under taskset -c 1")
    arguments = list(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(arguments)

    if options.case:
        return run_child(options)
    cases = _all_cases()
    if options.list:
        for name, case in cases.items():
            print(f"{name:36} {case.label}")
        return 0
    if options.pinned:
        status = _reexec_pinned(arguments)
        if status >= 0:
            return status
    selected = [name for name in cases if not options.only or any(part in name for part in options.only)]
    if not selected:
        parser.error("--only matched no case; see --list")

    with tempfile.TemporaryDirectory(prefix="toolrt-scale-") as scratch:
        if str(SRC_DIR) not in sys.path:
            sys.path.insert(0, str(SRC_DIR))
        if any(name.startswith("log/") for name in selected):
            for size, events in LOG_SIZES.items():
                write_log(Path(scratch) / f"session-{size}.jsonl", events)
        child_args = ["--log-dir", scratch, *(["--quick"] if options.quick else [])]
        started = time.monotonic()
        summaries = run_cases_in_subprocesses(
            __file__,
            selected,
            runs=options.runs,
            child_args=child_args,
            timeout_s=900,
            progress=lambda message: print(message, file=sys.stderr, flush=True),
        )
        elapsed = time.monotonic() - started

    pinned = os.environ.get("TOOLRT_SCALE_PINNED") == "1"
    affinity = "pinned to CPU 1 (taskset -c 1)" if pinned else "unpinned"
    print("## toolrt growth curves (benchmarks/scale.py)")
    print()
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {affinity}; {options.runs} interleaved "
        "run(s), one child process per case per run; median = median of per-run medians, "
        f"p95 = median of per-run p95s, spread = (max − min) / median; took {elapsed:.0f} s."
    )
    failed = False
    for family in FAMILIES.values():
        chosen = [case for case in family.cases if case.name in selected]
        if not chosen:
            continue
        print()
        print(f"### {family.title}")
        print()
        shown = [Case(case.name, case.label, _never) for case in chosen]
        print(format_table(shown, summaries))
        print()
        for line in family.report(summaries):
            print(f"- {line}")
        failed = failed or any(summaries[case.name].errors for case in chosen)
    if failed:
        errors = {name: summary.errors[0] for name, summary in summaries.items() if summary.errors}
        print(f"\nFAILED cases: {errors}", file=sys.stderr)
        return 1
    return 0


async def _never() -> Any:  # the table needs a Case; scale.py's cases set up through ScaleCase
    raise NotImplementedError


if __name__ == "__main__":
    raise SystemExit(main())
