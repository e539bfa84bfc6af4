"""Shared timing harness for toolrt's hand-run benchmarks (never imported by the test suite).

A benchmark script declares its cases and hands them to :func:`bench_main`::

    CASES = [
        Case("floor/await", "await add(1, 2)", setup_await_floor, group="floor"),
        Case("toolrt/no-listeners", "rt.execute(add)", setup_toolrt, floor="floor/await"),
    ]
    if __name__ == "__main__":
        raise SystemExit(bench_main(CASES, title="...", baseline="toolrt/no-listeners"))

A case's ``setup`` is an ``async`` factory that imports what it needs, checks correctness (raise
:class:`Skip` when an optional dependency is missing; let an ``AssertionError`` fail the case) and
returns the zero-argument callable to time. The callable may be sync or return an awaitable.

The method is contract BM1 (``docs/contract.md`` §8.1):

- ``time.perf_counter_ns`` around each sample; a sample is one call, or ``inner`` back-to-back calls
  for sub-µs callables (the value reported is then per call). GC stays enabled.
- Warm-up for about 0.2 s, then as many samples as fill about 1.5 s, clamped to 300–30,000.
- Every case runs in its own child process (``python SCRIPT --case NAME --json``) so one library's
  imports or GC heap cannot affect another; the whole set is repeated ``--runs`` times, interleaved
  (run 1 of every case, then run 2, ...). Summaries are the median of the per-run medians, the median
  of the per-run p95s, and ``spread`` = (max − min) / median of the per-run medians.

Building blocks for other scripts: :func:`measure` (time one callable in this process),
:func:`run_cases_in_subprocesses` (the interleaved child-process driver) and :func:`format_table`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "Case",
    "CaseSummary",
    "Paced",
    "RunOutcome",
    "Skip",
    "Stats",
    "bench_main",
    "format_duration",
    "format_table",
    "measure",
    "measure_paced",
    "parse_child_args",
    "report_child_outcome",
    "run_case_here",
    "run_cases_in_subprocesses",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
SRC_DIR = REPO_ROOT / "src"

Timed = Callable[[], object]
"""A zero-argument callable to time: returns a value, or an awaitable that is awaited."""


class Skip(Exception):
    """Raised by a case's setup when it cannot run here (e.g. an optional extra is not installed)."""


@dataclass(frozen=True, slots=True)
class Paced:
    """A timed callable whose every sample is preceded by ``before`` (awaited, not timed); for
    samples that consume something (a pooled child, a started process) a sampler must replace."""

    fn: Timed
    before: Callable[[], Awaitable[None]]

    def __call__(self) -> object:
        return self.fn()


# --- measuring one callable ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stats:
    """Per-call timings of one measurement, in nanoseconds."""

    median_ns: float
    p95_ns: float
    mean_ns: float
    min_ns: float
    samples: int
    inner: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stats:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty sequence."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _stats(samples_ns: Sequence[int], inner: int) -> Stats:
    per_call = sorted(sample / inner for sample in samples_ns)
    return Stats(
        median_ns=statistics.median(per_call),
        p95_ns=_percentile(per_call, 0.95),
        mean_ns=statistics.fmean(per_call),
        min_ns=per_call[0],
        samples=len(per_call),
        inner=inner,
    )


async def measure(
    fn: Timed,
    *,
    warmup_s: float = 0.2,
    target_s: float = 1.5,
    min_samples: int = 300,
    max_samples: int = 30_000,
    inner: int | None = None,
    sub_us_sample_ns: float = 10_000.0,
) -> Stats:
    """Time ``fn`` (sync, or returning an awaitable) in the running event loop.

    Warms up for ``warmup_s`` (at least 10 calls), then takes as many samples as fill ``target_s``,
    clamped to ``[min_samples, max_samples]``. ``inner=None`` picks it automatically: 1 for calls of
    1 µs or more, otherwise enough back-to-back calls to make a sample about ``sub_us_sample_ns``.
    Call it from a coroutine; a sync-only script can use ``asyncio.run(measure(fn))``.
    """
    perf = time.perf_counter_ns
    first = fn()
    is_async = inspect.isawaitable(first)
    if is_async:
        await first  # type: ignore[misc]  # isawaitable() narrowed it at runtime

    warm_calls = 0
    warm_start = perf()
    deadline = warm_start + int(warmup_s * 1e9)
    while warm_calls < 10 or perf() < deadline:
        if is_async:
            await fn()  # type: ignore[misc]
        else:
            fn()
        warm_calls += 1
    per_call_ns = max(1.0, (perf() - warm_start) / warm_calls)

    if inner is None:
        inner = 1 if per_call_ns >= 1_000 else max(1, math.ceil(sub_us_sample_ns / per_call_ns))
    count = int(target_s * 1e9 / (per_call_ns * inner))
    count = min(max_samples, max(min_samples, count))

    samples = [0] * count
    gc.collect()
    if is_async:
        if inner == 1:
            for i in range(count):
                t0 = perf()
                await fn()  # type: ignore[misc]
                samples[i] = perf() - t0
        else:
            loop_range = range(inner)
            for i in range(count):
                t0 = perf()
                for _ in loop_range:
                    await fn()  # type: ignore[misc]
                samples[i] = perf() - t0
    elif inner == 1:
        for i in range(count):
            t0 = perf()
            fn()
            samples[i] = perf() - t0
    else:
        loop_range = range(inner)
        for i in range(count):
            t0 = perf()
            for _ in loop_range:
                fn()
            samples[i] = perf() - t0
    return _stats(samples, inner)


async def measure_paced(
    fn: Timed, *, warmup_s: float, target_s: float, min_samples: int, quick_min_samples: int, max_samples: int
) -> Stats:
    """Time ``fn`` one call per sample, after the untimed ``before`` of a :class:`Paced`, for samples
    too long (a sandbox run, a server round trip) for :func:`measure`'s hundreds of samples.

    Warms up for ``warmup_s`` (at least 3 calls); the sample count fills ``target_s`` counting each
    whole sample (pause included), clamped to ``[min_samples, max_samples]`` (``quick_min_samples``
    when ``target_s`` is under 1 s, ``--quick``: a smoke test).
    """
    before = fn.before if isinstance(fn, Paced) else None
    perf = time.perf_counter_ns

    async def sample() -> int:
        if before is not None:
            await before()
        t0 = perf()
        result = fn()
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            await result
        return perf() - t0

    started = perf()
    calls = 0
    while calls < 3 or perf() - started < warmup_s * 1e9:
        await sample()
        calls += 1
    per_sample = (perf() - started) / calls
    floor = min_samples if target_s >= 1 else quick_min_samples
    count = min(max_samples, max(floor, int(target_s * 1e9 / per_sample)))
    gc.collect()
    return _stats([await sample() for _ in range(count)], 1)


# --- cases and the child-process protocol ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Case:
    """One timed path.

    ``setup`` runs in the child process: imports, builds, checks correctness, returns the callable.
    ``floor`` names the case this one is compared against in the "vs floor" column; ``packages``
    are distributions whose versions the child reports; ``note`` is printed under the table.
    """

    name: str
    label: str
    setup: Callable[[], Awaitable[Timed]]
    group: str = ""
    floor: str | None = None
    packages: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What one child process reported for one case."""

    case: str
    status: str  # "ok" | "skipped" | "error"
    stats: Stats | None = None
    reason: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "case": self.case,
                "status": self.status,
                "stats": None if self.stats is None else self.stats.to_dict(),
                "reason": self.reason,
                "versions": dict(self.versions),
            }
        )

    @classmethod
    def from_json(cls, line: str) -> RunOutcome:
        data = json.loads(line)
        stats = None if data.get("stats") is None else Stats.from_dict(data["stats"])
        return cls(data["case"], data["status"], stats, data.get("reason", ""), data.get("versions", {}))


def _versions(packages: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def parse_child_args(argv: Sequence[str], cases: Sequence[Case]) -> tuple[Case, argparse.Namespace]:
    """A paced script's child command line, ``--case NAME [--json] [--warmup-s S] [--target-s S]``:
    the case to run and the options (an unknown case exits with a usage error)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--warmup-s", type=float, default=0.2)
    parser.add_argument("--target-s", type=float, default=1.5)
    args, _ = parser.parse_known_args(argv)
    by_name = {case.name: case for case in cases}
    if args.case not in by_name:
        parser.error(f"unknown case {args.case!r}; see --list")
    return by_name[args.case], args


async def run_case_here(case: Case, sample: Callable[[Timed], Awaitable[Stats]]) -> RunOutcome:
    """Set ``case`` up and ``sample`` it in this process: a setup that skips or fails (its
    correctness check included), or sampling that fails, is an outcome, not a crash."""
    try:
        fn = await case.setup()
    except Skip as skip:
        return RunOutcome(case.name, "skipped", reason=str(skip))
    except Exception as error:
        return RunOutcome(case.name, "error", reason=f"setup/correctness check failed: {error!r}")
    try:
        stats = await sample(fn)
    except Exception as error:
        return RunOutcome(case.name, "error", reason=f"sampling failed: {error!r}")
    return RunOutcome(case.name, "ok", stats, versions=_versions(case.packages))


def report_child_outcome(name: str, outcome: RunOutcome, *, as_json: bool, unit: str) -> int:
    """Print one case's outcome (a JSON line for the parent, else a readable line naming the
    sampling ``unit``) and return the child's exit status."""
    if as_json:
        print(outcome.to_json())
    elif outcome.stats is not None:
        stats = outcome.stats
        print(
            f"{name}: median {format_duration(stats.median_ns)}, "
            f"p95 {format_duration(stats.p95_ns)} ({stats.samples} {unit})"
        )
    else:
        print(f"{name}: {outcome.status}: {outcome.reason}")
    return 1 if outcome.status == "error" else 0


def _child_env() -> dict[str, str]:
    """The children's environment: the checkout's ``src`` first on ``PYTHONPATH``, so the toolrt
    measured is this working tree even in a venv where it is not installed."""
    env = dict(os.environ)
    parts = [str(SRC_DIR), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    return env


def _ensure_src_on_path() -> None:
    if str(SRC_DIR) not in sys.path:
        sys.path.insert(0, str(SRC_DIR))


# --- driving children and summarising ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaseSummary:
    """All runs of one case, and the cross-run summary the tables show."""

    case: str
    runs: tuple[Stats, ...]
    skipped: str = ""
    errors: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and not self.errors

    @property
    def median_ns(self) -> float:
        """Median of the per-run medians."""
        return statistics.median(run.median_ns for run in self.runs)

    @property
    def p95_ns(self) -> float:
        """Median of the per-run p95s."""
        return statistics.median(run.p95_ns for run in self.runs)

    @property
    def spread(self) -> float:
        """(max − min) / median of the per-run medians."""
        medians = [run.median_ns for run in self.runs]
        return (max(medians) - min(medians)) / statistics.median(medians)


def run_cases_in_subprocesses(
    script: str | Path,
    cases: Sequence[str],
    *,
    runs: int = 3,
    python: str = sys.executable,
    child_args: Sequence[str] = (),
    timeout_s: float = 300.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, CaseSummary]:
    """Run every case ``runs`` times, interleaved, each in a fresh ``python script --case NAME --json``.

    The child must print a :class:`RunOutcome` JSON line last on stdout (:func:`bench_main` does).
    A child that crashes, times out or prints no outcome counts as an error for that run.
    """
    say = progress or (lambda _message: None)
    outcomes: dict[str, list[RunOutcome]] = {name: [] for name in cases}
    env = _child_env()
    for run in range(1, runs + 1):
        for name in cases:
            command = [python, str(script), "--case", name, "--json", *child_args]
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, env=env, timeout=timeout_s, check=False
                )
            except subprocess.TimeoutExpired:
                outcome = RunOutcome(name, "error", reason=f"timed out after {timeout_s:.0f} s")
            else:
                lines = [line for line in done.stdout.splitlines() if line.strip()]
                try:
                    outcome = RunOutcome.from_json(lines[-1])
                except (IndexError, ValueError, KeyError):
                    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                    outcome = RunOutcome(name, "error", reason=f"child exited {done.returncode}: {tail}")
            outcomes[name].append(outcome)
            shown = format_duration(outcome.stats.median_ns) if outcome.stats else outcome.status
            say(f"[run {run}/{runs}] {name}: {shown}")

    summaries: dict[str, CaseSummary] = {}
    for name, results in outcomes.items():
        versions: dict[str, str] = {}
        for result in results:
            versions.update(result.versions)
        skipped = next((r.reason for r in results if r.status == "skipped"), "")
        summaries[name] = CaseSummary(
            case=name,
            runs=tuple(r.stats for r in results if r.status == "ok" and r.stats is not None),
            skipped=skipped,
            errors=tuple(r.reason for r in results if r.status == "error"),
            versions=versions,
        )
    return summaries


def format_duration(ns: float) -> str:
    """``272 ns``, ``12.28 µs``, ``1.56 ms``, ``2.10 s``."""
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.2f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.2f} ms"
    return f"{ns / 1_000_000_000:.2f} s"


def _ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}×" if reference > 0 else "—"


def format_table(
    cases: Sequence[Case],
    summaries: Mapping[str, CaseSummary],
    *,
    baseline: str | None = None,
    skipped_text: str | None = None,
) -> str:
    """A Markdown table: case, median, p95, spread, per-run medians, ratio vs ``baseline``, vs floor."""
    base = summaries.get(baseline) if baseline else None
    base_ns = base.median_ns if base is not None and base.ok else None
    header = ["case", "median", "p95", "spread", "run medians"]
    if baseline:
        header.append(f"vs {baseline}")
    header.append("vs floor")
    rows = [header, ["---", "---:", "---:", "---:", "---", *(["---:"] if baseline else []), "---"]]
    for case in cases:
        summary = summaries.get(case.name)
        title = f"{case.name} — {case.label}"
        if summary is None:
            continue
        if not summary.ok:
            if summary.errors:
                status = f"FAILED: {summary.errors[0]}"
            else:
                status = skipped_text or f"skipped ({summary.skipped})"
            rows.append([title, status, "", "", "", *([""] if baseline else []), ""])
            continue
        floor_text = "—"
        floor = summaries.get(case.floor) if case.floor else None
        if floor is not None and floor.ok:
            floor_text = f"{_ratio(summary.median_ns, floor.median_ns)} {case.floor}"
        row = [
            title,
            format_duration(summary.median_ns),
            format_duration(summary.p95_ns),
            f"{summary.spread:.0%}",
            " / ".join(format_duration(run.median_ns) for run in summary.runs),
        ]
        if baseline:
            row.append(_ratio(summary.median_ns, base_ns) if base_ns else "—")
        row.append(floor_text)
        rows.append(row)
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def _environment_line() -> str:
    return (
        f"Python {platform.python_version()} ({sys.executable}), {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}, GC on"
    )


def bench_main(
    cases: Sequence[Case],
    *,
    title: str,
    baseline: str | None = None,
    argv: Sequence[str] | None = None,
    skipped_text: str | None = None,
    epilogue: Callable[[Mapping[str, CaseSummary]], str] | None = None,
) -> int:
    """Command line for a benchmark script: parent mode (default) or one child (``--case NAME``).

    Parent options: ``--runs N`` (default 3), ``--only SUBSTRING`` (repeatable), ``--list``,
    ``--quick`` (0.05 s warm-up, 0.3 s sampling: a smoke test, not a measurement) and
    ``--json-out FILE`` (every run's stats). Returns the process exit code: 1 if any case failed.
    """
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--case", help="(child mode) run this one case in this process")
    parser.add_argument("--json", action="store_true", help="(child mode) print the outcome as JSON")
    parser.add_argument("--runs", type=int, default=3, help="interleaved repetitions (default 3)")
    parser.add_argument("--only", action="append", default=[], help="run only cases containing this")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--quick", action="store_true", help="short smoke run (not a measurement)")
    parser.add_argument("--warmup-s", type=float, default=0.2)
    parser.add_argument("--target-s", type=float, default=1.5)
    parser.add_argument("--json-out", type=Path, help="write every run's stats to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.warmup_s, args.target_s = 0.05, 0.3
    by_name = {case.name: case for case in cases}

    if args.list:
        for case in cases:
            print(f"{case.name:32} {case.label}")
        return 0

    if args.case:
        _ensure_src_on_path()
        chosen = by_name.get(args.case)
        if chosen is None:
            parser.error(f"unknown case {args.case!r}; see --list")
        warmup_s, target_s = args.warmup_s, args.target_s
        outcome = asyncio.run(
            run_case_here(chosen, lambda fn: measure(fn, warmup_s=warmup_s, target_s=target_s))
        )
        unit = f"samples × {outcome.stats.inner}" if outcome.stats is not None else "samples"
        return report_child_outcome(chosen.name, outcome, as_json=args.json, unit=unit)

    selected = [c for c in cases if not args.only or any(part in c.name for part in args.only)]
    if not selected:
        parser.error("--only matched no case; see --list")
    child_args = ["--warmup-s", str(args.warmup_s), "--target-s", str(args.target_s)]
    started = time.monotonic()
    summaries = run_cases_in_subprocesses(
        sys.argv[0],
        [c.name for c in selected],
        runs=args.runs,
        child_args=child_args,
        progress=lambda message: print(message, file=sys.stderr, flush=True),
    )
    elapsed = time.monotonic() - started

    print(f"## {title}")
    print()
    print(_environment_line())
    print(
        f"{args.runs} interleaved run(s), one child process per case per run; warm-up {args.warmup_s:g} s, "
        f"sampling ~{args.target_s:g} s (300–30,000 samples); median = median of per-run medians, "
        f"p95 = median of per-run p95s; took {elapsed:.0f} s."
    )
    versions: dict[str, str] = {}
    for summary in summaries.values():
        versions.update(summary.versions)
    if versions:
        print("Versions: " + ", ".join(f"{name}={version}" for name, version in sorted(versions.items())))
    print()
    print(format_table(selected, summaries, baseline=baseline, skipped_text=skipped_text))
    notes = [f"- {c.name}: {c.note}" for c in selected if c.note]
    if notes:
        print()
        print("\n".join(notes))
    if epilogue is not None:
        text = epilogue(summaries)
        if text:
            print()
            print(text)

    if args.json_out is not None:
        args.json_out.write_text(
            json.dumps(
                {
                    name: {
                        "runs": [run.to_dict() for run in s.runs],
                        "skipped": s.skipped,
                        "errors": list(s.errors),
                        "versions": dict(s.versions),
                    }
                    for name, s in summaries.items()
                },
                indent=2,
            )
        )
    failed = [name for name, s in summaries.items() if s.errors]
    if failed:
        print(f"\nFAILED cases: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
