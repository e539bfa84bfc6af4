"""PythonSandboxRuntime end to end: real, confined child processes only (no mocks of the child).

The backend is whatever ``auto`` resolves to on this machine (bwrap, else Landlock + seccomp); the
hostile-frame tests swap the bootstrap for a forged child and run it with the explicit unconfined
opt-in. Limits are short so the file runs in well under a minute.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from machine import PROBES, confined_backends

from toolrt._abort import AbortController
from toolrt.codemode._code_runtime import (
    NO_VALUE,
    BindingAnswer,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunLimits,
    CodeRunRequest,
    CodeRunResult,
    CodeRuntime,
)
from toolrt.sandbox import ProbeResults, PythonSandboxRuntime

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the Python sandbox is Linux-only")

BACKENDS = confined_backends()
CONFINED = bool(BACKENDS)
if not BACKENDS:
    BACKENDS.append("unconfined")  # still real children, with the explicit opt-in
ERROR_CLASS = CodeErrorClass("ToolCallError", "toolName")


async def echo(args: Any) -> Any:
    return {"echo": args}


async def fail(args: Any) -> Any:
    raise ValueError("kaboom")


async def lossy(args: Any) -> Any:
    return {1, 2}


def tools(**functions: Callable[[Any], Awaitable[Any]]) -> list[CodeBindingNamespace]:
    return [
        CodeBindingNamespace("tools", {"echo": echo, "fail": fail, "lossy": lossy, **functions}, ERROR_CLASS)
    ]


def make_runtime(backend: str = "auto", **kwargs: Any) -> PythonSandboxRuntime:
    kwargs.setdefault("pool_size", 0)
    kwargs.setdefault("allow_unconfined", not CONFINED)
    return PythonSandboxRuntime(backend=backend, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def runtime(backend: str) -> AsyncIterator[PythonSandboxRuntime]:
    rt = make_runtime(backend)
    yield rt
    await rt.aclose()


async def run(
    rt: PythonSandboxRuntime,
    program: str,
    bindings: list[CodeBindingNamespace] | None = None,
    *,
    timeout: float = 20,
    **limits: Any,
) -> CodeRunResult:
    request = CodeRunRequest(
        textwrap.dedent(program),
        tools() if bindings is None else bindings,
        limits=CodeRunLimits(**limits) if limits else None,
    )
    result = await asyncio.wait_for(rt.run(request), timeout)
    check_meta(result)
    return result


def check_meta(result: CodeRunResult) -> None:
    isolation = result.meta["isolation"]
    assert isolation["kind"] == "process"
    assert isolation["enforcement"] in ("full", "partial", "none")
    assert set(isolation) == {"kind", "enforcement", "layers", "landlockAbi", "notes"}


def ok(result: CodeRunResult) -> Any:
    assert result.error is None, result.error
    return result.value


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --- the program model ------------------------------------------------------------------------------


async def test_runtime_shape(runtime: PythonSandboxRuntime) -> None:
    assert isinstance(runtime, CodeRuntime)
    assert runtime.language == "python"
    report = runtime.isolation
    assert report.kind == "process"
    if CONFINED:
        assert report.enforcement in ("full", "partial")
        assert "seccomp" in report.layers


async def test_top_level_await_and_return(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "x = await tools.echo({'a': 1})\nreturn [x, 2]")
    assert ok(result) == [{"echo": {"a": 1}}, 2]
    assert result.meta["backend"] in ("bwrap", "landlock", "unconfined")


async def test_completion_without_return_is_no_value(runtime: PythonSandboxRuntime) -> None:
    assert ok(await run(runtime, "x = 1")) is NO_VALUE
    assert ok(await run(runtime, "")) is NO_VALUE
    assert ok(await run(runtime, "return None")) is None
    assert ok(await run(runtime, "return")) is None


async def test_print_goes_to_logs(runtime: PythonSandboxRuntime) -> None:
    program = """
        import sys
        print("a", 1, [2])
        print("b", "c", sep="-")
        print()
        sys.stdout.write("line one\\nline two\\npartial")
        print("multi\\nline")
        return "done"
    """
    result = await run(runtime, program)
    assert ok(result) == "done"
    assert result.logs == ("a 1 [2]", "b-c", "", "line one", "line two", "partial", "multi\nline")


async def test_source_positions_and_strings_are_the_programs_own(runtime: PythonSandboxRuntime) -> None:
    program = 's = """x\n  y"""\n\nraise RuntimeError(s)\n'
    result = await run(runtime, program)
    assert result.error is not None and result.error.kind == "exception"
    assert 'File "<run_code>", line 4, in <module>' in result.error.message
    assert result.error.message.endswith("RuntimeError: x\n  y")


async def test_exception_traceback_shows_program_lines_only(runtime: PythonSandboxRuntime) -> None:
    program = """
        def inner(n):
            return {}[n]

        async def outer():
            return inner("missing")

        await outer()
    """
    result = await run(runtime, program)
    assert result.error is not None and result.error.kind == "exception"
    message = result.error.message
    assert message.splitlines() == [
        "Traceback (most recent call last):",
        '  File "<run_code>", line 8, in <module>',
        "    await outer()",
        '  File "<run_code>", line 6, in outer',
        '    return inner("missing")',
        '  File "<run_code>", line 3, in inner',
        "    return {}[n]",
        "KeyError: 'missing'",
    ]
    assert "bootstrap" not in message


async def test_chained_exceptions_and_syntax_errors(runtime: PythonSandboxRuntime) -> None:
    chained = await run(
        runtime, "try:\n    1/0\nexcept ZeroDivisionError as e:\n    raise ValueError('v') from e"
    )
    assert chained.error is not None
    assert "ZeroDivisionError: division by zero" in chained.error.message
    assert "direct cause" in chained.error.message
    assert chained.error.message.endswith("ValueError: v")
    syntax = await run(runtime, "x = 1\ny = (\n")
    assert syntax.error is not None and syntax.error.kind == "exception"
    assert 'File "<run_code>", line 2' in syntax.error.message
    assert "SyntaxError" in syntax.error.message


async def test_only_the_bindings_and_error_class_are_globals(runtime: PythonSandboxRuntime) -> None:
    program = """
        names = sorted(globals())
        return [names, 'open' in __builtins__, type(tools).__name__ != 'module']
    """
    names, has_open, _ = ok(await run(runtime, program))
    assert [name for name in names if not (name.startswith("__") and name.endswith("__"))] == [
        "ToolCallError",
        "tools",
    ]
    assert has_open


async def test_completion_must_be_lossless_json(runtime: PythonSandboxRuntime) -> None:
    for expression in ["{1, 2}", "float('nan')", "2**53 + 1", "-0.0", "{1: 'x'}", "b'x'"]:
        result = await run(runtime, f"return {expression}")
        assert result.error is not None, expression
        assert (result.error.kind, result.error.message) == (
            "invalid-output",
            "program completion must be lossless JSON",
        )
    assert ok(await run(runtime, "return (1, 'é', {'a': [2**60, 1.5, None, True]})")) == [
        1,
        "é",
        {"a": [2**60, 1.5, None, True]},
    ]


# --- bindings ---------------------------------------------------------------------------------------


async def test_binding_errors_raise_the_error_class(runtime: PythonSandboxRuntime) -> None:
    program = """
        out = []
        for name, args in [("fail", {}), ("nope", {}), ("lossy", {}), ("echo", {"s": {1}})]:
            try:
                await tools[name](args)
            except ToolCallError as error:
                out.append([error.toolName, str(error)])
        return out
    """
    assert ok(await run(runtime, program)) == [
        ["fail", "kaboom"],
        ["nope", 'unknown binding "tools.nope"'],
        ["lossy", "binding resolution must be lossless JSON"],
        ["echo", "binding arguments must be lossless JSON"],
    ]


async def test_uncaught_binding_error_names_the_program_line(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "x = 1\nawait tools.nope({})")
    assert result.error is not None
    assert result.error.message.splitlines()[-3:] == [
        '  File "<run_code>", line 2, in <module>',
        "    await tools.nope({})",
        'ToolCallError: unknown binding "tools.nope"',
    ]


async def test_keyword_and_empty_arguments(runtime: PythonSandboxRuntime) -> None:
    program = "return [await tools.echo(a=1, b='x'), await tools.echo()]"
    assert ok(await run(runtime, program)) == [{"echo": {"a": 1, "b": "x"}}, {"echo": {}}]


async def test_gather_overlaps_binding_calls(runtime: PythonSandboxRuntime) -> None:
    a_started, b_started = asyncio.Event(), asyncio.Event()

    async def a(args: Any) -> str:
        a_started.set()
        await asyncio.wait_for(b_started.wait(), 5)  # deadlocks (times out) if calls were serial
        return "a"

    async def b(args: Any) -> str:
        b_started.set()
        await asyncio.wait_for(a_started.wait(), 5)
        return "b"

    program = "import asyncio\nreturn await asyncio.gather(tools.a({}), tools.b({}))"
    started = time.perf_counter()
    assert ok(await run(runtime, program, tools(a=a, b=b))) == ["a", "b"]
    assert time.perf_counter() - started < 4


async def test_in_flight_calls_are_bounded_by_backpressure(backend: str) -> None:
    rt = make_runtime(backend, max_in_flight_calls=2)
    active = peak = 0

    async def slow(args: Any) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return args["i"]

    try:
        program = "import asyncio\nreturn await asyncio.gather(*(tools.slow({'i': i}) for i in range(7)))"
        assert ok(await run(rt, program, tools(slow=slow))) == list(range(7))
        assert peak == 2
    finally:
        await rt.aclose()


async def test_many_sequential_calls(runtime: PythonSandboxRuntime) -> None:
    program = "total = 0\nfor i in range(200):\n    total += (await tools.echo({'i': i}))['echo']['i']\n"
    program += "return total"
    assert ok(await run(runtime, program)) == sum(range(200))


async def test_binding_calls_in_flight_are_cancelled_when_the_run_ends(runtime: PythonSandboxRuntime) -> None:
    cancelled = asyncio.Event()

    async def forever(args: Any) -> Any:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    program = (
        "import asyncio\nt = asyncio.ensure_future(tools.forever({}))\nawait asyncio.sleep(0.2)\nreturn 1"
    )
    assert ok(await run(runtime, program, tools(forever=forever))) == 1
    assert cancelled.is_set()


async def test_bindings_answering_with_a_binding_answer(runtime: PythonSandboxRuntime) -> None:
    # The Code Mode bridge's kind of answer: the reply goes out from inside its resolution. It may
    # be settled later, with a failure, or never (cancelled when the run ends, freeing its slot).
    loop = asyncio.get_running_loop()
    unsettled: list[BindingAnswer] = []

    def later(args: Any) -> BindingAnswer:
        answer = BindingAnswer(loop=loop)
        loop.call_later(0.01, answer.set_result, {"later": args["x"]})
        return answer

    def refused(args: Any) -> BindingAnswer:
        answer = BindingAnswer(loop=loop)
        answer.set_exception(RuntimeError("refused at once"))
        return answer

    def never(args: Any) -> BindingAnswer:
        answer = BindingAnswer(loop=loop)
        unsettled.append(answer)
        return answer

    program = """
        import asyncio
        values = [await tools.later({"x": i}) for i in range(3)]
        try:
            await tools.refused({})
        except ToolCallError as error:
            values.append(str(error))
        asyncio.ensure_future(tools.never({}))
        await asyncio.sleep(0.05)
        return values
    """
    bindings = tools(later=later, refused=refused, never=never)
    assert ok(await run(runtime, program, bindings)) == [
        {"later": 0},
        {"later": 1},
        {"later": 2},
        "refused at once",
    ]
    assert len(unsettled) == 1 and unsettled[0].cancelled()


async def test_a_binding_answer_is_replied_to_from_inside_its_resolution(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The point of a BindingAnswer: the reply frame is written while set_result runs, not one
    # event-loop turn later from a done-callback.
    from toolrt.sandbox._host import process as child_module

    loop = asyncio.get_running_loop()
    resolving = [False]
    sent_while_resolving: list[bool] = []
    send = child_module.Child.send

    def observed_send(self: Any, payload: dict[str, Any]) -> None:
        if payload.get("t") == "reply":
            sent_while_resolving.append(resolving[0])
        send(self, payload)

    def resolve(answer: BindingAnswer, value: Any) -> None:
        resolving[0] = True
        try:
            answer.set_result(value)
        finally:
            resolving[0] = False

    def later(args: Any) -> BindingAnswer:
        answer = BindingAnswer(loop=loop)
        loop.call_soon(resolve, answer, args["x"])
        return answer

    monkeypatch.setattr(child_module.Child, "send", observed_send)
    rt = make_runtime(backend)
    try:
        program = "return [await tools.later({'x': i}) for i in range(3)]"
        assert ok(await run(rt, program, tools(later=later))) == [0, 1, 2]
    finally:
        await rt.aclose()
    assert sent_while_resolving == [True, True, True]


# --- limits -----------------------------------------------------------------------------------------


async def test_wall_clock_limit(runtime: PythonSandboxRuntime) -> None:
    started = time.perf_counter()
    result = await run(runtime, "import time\ntime.sleep(30)", wall_seconds=1)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("timeout", "wall-clock ceiling reached (1s)")
    assert time.perf_counter() - started < 5
    assert pid_gone(result.meta["pid"])


async def test_cpu_limit(runtime: PythonSandboxRuntime) -> None:
    started = time.perf_counter()
    result = await run(runtime, "while True:\n    pass", cpu_seconds=1, wall_seconds=10)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("cpu-limit", "CPU budget exhausted (1s)")
    assert time.perf_counter() - started < 9  # the budget is CPU time: under load it takes longer


async def test_cpu_limit_survives_ignoring_sigxcpu(runtime: PythonSandboxRuntime) -> None:
    program = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
    result = await run(runtime, program, cpu_seconds=1, wall_seconds=10)
    assert result.error is not None and result.error.kind == "cpu-limit"


async def test_memory_limit(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "x = bytearray(1 << 30)\nreturn len(x)", memory_bytes=128 << 20)
    assert result.error is not None
    assert result.error.kind == "memory-limit"
    assert "memory limit reached (134217728 bytes)" in result.error.message
    growing = await run(
        runtime, "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 20))", memory_bytes=128 << 20
    )
    assert growing.error is not None and growing.error.kind == "memory-limit"


async def test_output_limit_keeps_the_fitting_logs(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "for i in range(1000):\n    print('x' * 99)", output_bytes=1024)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("output-limit", "outer output exceeded 1024 bytes")
    assert result.logs == ("x" * 99,) * 10
    one_big = await run(runtime, "print('y' * 100_000)", output_bytes=1024)
    assert one_big.error is not None and one_big.error.kind == "output-limit"
    assert one_big.logs == ()


async def test_raw_stdout_and_stderr_count_toward_output(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "import os, time\nos.write(2, b'e' * 5000)\ntime.sleep(5)", output_bytes=1024)
    assert result.error is not None and result.error.kind == "output-limit"


async def test_value_limit(runtime: PythonSandboxRuntime) -> None:
    result = await run(runtime, "return 'x' * 5000", value_bytes=1024)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == (
        "value-limit",
        "completion value exceeded 1024 bytes",
    )
    assert ok(await run(runtime, "return 'x' * 1000", value_bytes=1024)) == "x" * 1000


_MANY_SMALL_FILES = """
    import time
    for i in range(32):
        with open(f'f{i}', 'wb') as f:
            f.write(b'x' * 65536)
    time.sleep(10)
"""

# Empty files cost no bytes, so a byte cap alone (bwrap's tmpfs) would let a program create them
# until the wall clock; the host counts the work dir's entries on every backend (under bwrap through
# /proc/<pid>/root of the namespace's init).
_MANY_EMPTY_FILES = """
    import time
    for i in range(12_000):
        open(f'e{i}', 'w').close()
    time.sleep(10)
"""

_DEEP_TREE = """
    import os, time
    os.makedirs('/'.join(['d'] * 140))
    time.sleep(10)
"""


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("open('big', 'wb').write(b'x' * (2 << 20))", "disk quota exceeded (1048576 bytes)"),
        (_MANY_SMALL_FILES, "disk quota exceeded (1048576 bytes)"),
        (_MANY_EMPTY_FILES, "disk quota exceeded (10000 files and directories)"),
        (_DEEP_TREE, "disk quota exceeded (directories nested over 128 deep)"),
    ],
    ids=["one-big-file", "many-small-files", "many-empty-files", "deep-tree"],
)
async def test_disk_limit(backend: str, program: str, message: str) -> None:
    rt = make_runtime(backend, disk_bytes=1 << 20)
    try:
        result = await run(rt, program)
        assert result.error is not None
        assert (result.error.kind, result.error.message) == ("disk-limit", message)
    finally:
        await rt.aclose()


async def test_the_disk_quota_is_polled_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walking a work dir of up to 10,000 entries takes milliseconds: it runs on a worker thread so
    other runs and tool calls on this loop never wait for it. On landlock, whose work dir is a plain
    directory, only the poll can catch files that are each under the per-file limit."""
    if "landlock" not in BACKENDS:
        pytest.skip("needs the landlock backend (under bwrap the tmpfs itself refuses the bytes)")
    from toolrt.sandbox._host import run as run_module

    threads: set[int] = set()
    real = run_module.dir_usage

    def spy(path: str, max_entries: int) -> Any:
        threads.add(threading.get_ident())
        return real(path, max_entries)

    monkeypatch.setattr(run_module, "dir_usage", spy)
    rt = make_runtime("landlock", disk_bytes=1 << 20)
    try:
        # Files under the per-file limit (RLIMIT_FSIZE = the quota), so only the poll can catch them.
        program = """
            for i in range(3):
                open(f'f{i}', 'wb').write(b'x' * (600 << 10))
            import time
            time.sleep(10)
        """
        result = await run(rt, program)
        assert result.error is not None and result.error.kind == "disk-limit"
    finally:
        await rt.aclose()
    assert threads and threading.get_ident() not in threads


async def test_a_short_run_never_polls_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    # The watchdog's first look is one period into the run: a run that ends sooner pays no worker
    # thread hand-off (its work dir was empty when it started).
    if "landlock" not in BACKENDS:
        pytest.skip("only the landlock backend polls the work dir (bwrap's tmpfs is size-capped)")
    from toolrt.sandbox._host import run as run_module

    polls: list[str] = []
    real = run_module.dir_usage

    def spy(path: str, max_entries: int) -> Any:
        polls.append(path)
        return real(path, max_entries)

    monkeypatch.setattr(run_module, "dir_usage", spy)
    rt = make_runtime("landlock")
    try:
        assert ok(await run(rt, "return 1")) == 1
        assert polls == []
        slow = await run(rt, f"import time\ntime.sleep({run_module._WATCH_SECONDS * 3})\nreturn 2")
        assert ok(slow) == 2 and polls
    finally:
        await rt.aclose()


async def test_request_limits_override_runtime_limits(backend: str) -> None:
    rt = make_runtime(backend, limits=CodeRunLimits(output_bytes=10))
    try:
        assert (await run(rt, "print('x' * 20)")).error is not None
        assert ok(await run(rt, "print('x' * 20)", output_bytes=100)) is NO_VALUE
    finally:
        await rt.aclose()


# --- cancellation and disposal ------------------------------------------------------------------------


async def test_abort_mid_run(runtime: PythonSandboxRuntime) -> None:
    controller = AbortController()
    request = CodeRunRequest("import time\ntime.sleep(30)", tools(), signal=controller.signal)
    task = asyncio.ensure_future(runtime.run(request))
    await asyncio.sleep(0.5)
    started = time.perf_counter()
    controller.abort("user pressed stop")
    result = await asyncio.wait_for(task, 10)
    check_meta(result)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("abort", "user pressed stop")
    assert time.perf_counter() - started < 2
    assert pid_gone(result.meta["pid"])


async def test_cancelling_run_kills_and_reaps_the_child(runtime: PythonSandboxRuntime) -> None:
    seen: list[int] = []

    async def note(args: Any) -> Any:
        seen.append(args["pid"])
        return None

    program = "import os, time\nawait tools.note({'pid': os.getpid()})\ntime.sleep(30)"
    task = asyncio.ensure_future(runtime.run(CodeRunRequest(program, tools(note=note))))
    for _ in range(200):
        if seen:
            break
        await asyncio.sleep(0.025)
    assert seen
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    if runtime.isolation.layers[:1] != ("bwrap",):  # inside bwrap the pid is the namespace's own
        assert pid_gone(seen[0])


async def test_concurrent_runs_are_independent(runtime: PythonSandboxRuntime) -> None:
    programs = [f"import os\nopen('mine', 'w').write('{i}')\nreturn [{i}, os.listdir('.')]" for i in range(4)]
    results = await asyncio.gather(*(run(runtime, program) for program in programs))
    assert [ok(result) for result in results] == [[i, ["mine"]] for i in range(4)]


async def test_asyncio_and_threads_work_inside_the_sandbox(runtime: PythonSandboxRuntime) -> None:
    program = """
        import asyncio, threading
        box = []
        worker = threading.Thread(target=lambda: box.append(sum(range(10))))
        worker.start()
        worker.join()
        await asyncio.sleep(0.01)
        loop_result = await asyncio.to_thread(lambda: 'threaded')
        return [box[0], loop_result]
    """
    assert ok(await run(runtime, program)) == [45, "threaded"]


async def test_pre_aborted_signal_runs_nothing(runtime: PythonSandboxRuntime) -> None:
    controller = AbortController()
    controller.abort("too late")
    result = await runtime.run(CodeRunRequest("return 1", tools(), signal=controller.signal))
    check_meta(result)
    assert result.error is not None and (result.error.kind, result.error.message) == ("abort", "too late")
    assert "pid" not in result.meta


async def test_aclose_kills_the_pool_and_in_flight_runs(backend: str) -> None:
    rt = make_runtime(backend, pool_size=2)
    await rt.warm()
    assert rt._pool is not None and rt._pool.idle == 2
    idle_pids = [child.pid for child in rt._pool._idle]
    task = asyncio.ensure_future(rt.run(CodeRunRequest("import time\ntime.sleep(30)", tools())))
    await asyncio.sleep(0.5)
    await asyncio.wait_for(rt.aclose(), 10)
    result = await asyncio.wait_for(task, 10)
    check_meta(result)
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("abort", "runtime disposed")
    for pid in [*idle_pids, result.meta["pid"]]:
        assert pid_gone(pid)
    with pytest.raises(RuntimeError, match="runtime disposed"):
        await rt.run(CodeRunRequest("return 1", tools()))


async def test_pool_children_run_exactly_one_program(backend: str) -> None:
    rt = make_runtime(backend, pool_size=2)
    program = """
        import os
        seen = os.path.exists('marker')
        open('marker', 'w').write('x')
        return [os.getpid(), seen, os.getcwd()]
    """
    try:
        await rt.warm()
        results = []
        for _ in range(4):
            result = await run(rt, program)
            assert result.meta["warm"] is True
            results.append((result.meta["pid"], ok(result)))
            await rt.warm()
        assert len({host_pid for host_pid, _ in results}) == 4
        assert not any(seen for _, (_, seen, _) in results)
        # Per-run limits that differ from the pool's rlimits get a cold child.
        cold = await run(rt, "return 1", cpu_seconds=3)
        assert ok(cold) == 1 and cold.meta["warm"] is False
    finally:
        await rt.aclose()


async def test_warm_children_preimport_asyncio_without_ssl(backend: str) -> None:
    # A pooled child has asyncio ready (a gather program pays no import), but not ssl: the program
    # has no network, and ssl's heap and libraries made every pooled child ~4 MB bigger. A program
    # that imports ssl itself still gets it.
    rt = make_runtime(backend, pool_size=1)
    program = """
        import sys
        preloaded = sorted(name for name in ("asyncio", "ssl") if name in sys.modules)
        import ssl
        return [preloaded, ssl.__name__]
    """
    try:
        await rt.warm()
        result = await run(rt, program)
        assert result.meta["warm"] is True
        assert ok(result) == [["asyncio"], "ssl"]
    finally:
        await rt.aclose()


async def test_warm_run_reports_isolation_achieved(backend: str) -> None:
    rt = make_runtime(backend, pool_size=1)
    try:
        await rt.warm()
        result = await run(rt, "return 1")
        assert result.meta["warm"] is True
        assert result.meta["isolation"] == rt.isolation.as_json()
    finally:
        await rt.aclose()


# --- confinement ---------------------------------------------------------------------------------------


@pytest.mark.skipif(not CONFINED, reason="no confinement available on this machine")
async def test_confined_child_cannot_read_host_files(runtime: PythonSandboxRuntime) -> None:
    program = """
        out = []
        for path in ['/etc/passwd', '/etc/hostname']:
            try:
                open(path).read()
                out.append('read')
            except OSError as error:
                out.append(type(error).__name__)
        import os
        return [out, dict(os.environ)]
    """
    result = await run(runtime, program)
    denied, environ = ok(result)
    assert "read" not in denied
    assert set(environ) <= {"MALLOC_ARENA_MAX", "LC_CTYPE", "PWD"}
    assert result.meta["isolation"]["enforcement"] in ("full", "partial")


@pytest.mark.skipif(not CONFINED, reason="no confinement available on this machine")
async def test_only_the_channel_fd_is_inherited(runtime: PythonSandboxRuntime) -> None:
    program = """
        import os
        open_fds = []
        for fd in range(3, 256):
            try:
                os.fstat(fd)
                open_fds.append(fd)
            except OSError:
                pass
        return open_fds
    """
    assert ok(await run(runtime, program)) == [3]


@pytest.mark.skipif(PROBES is None or not PROBES.bwrap_works, reason="no working bwrap here")
async def test_bwrap_backend() -> None:
    rt = PythonSandboxRuntime(backend="bwrap", pool_size=0)
    try:
        result = await run(rt, "import os\nreturn [os.getcwd(), os.path.exists('/proc/self')]")
        assert ok(result) == ["/tmp/work", False]
        assert result.meta["isolation"]["layers"][0] == "bwrap"
    finally:
        await rt.aclose()


async def test_sandbox_unavailable_when_confinement_is_impossible() -> None:
    def no_confinement() -> ProbeResults:
        return ProbeResults(
            landlock_abi=None, seccomp=False, bwrap_path=None, bwrap_works=False, bwrap_reason="forced"
        )

    rt = PythonSandboxRuntime(pool_size=0, _probe=no_confinement)
    result = await rt.run(CodeRunRequest("return 1", tools()))
    check_meta(result)
    assert result.error is not None and result.error.kind == "sandbox-unavailable"
    for missing in ("Landlock", "seccomp", "bwrap (forced)", "allow_unconfined"):
        assert missing in result.error.message
    assert result.meta["isolation"]["enforcement"] == "none"
    assert rt.isolation.enforcement == "none"
    await rt.aclose()

    forced_bwrap = PythonSandboxRuntime(backend="bwrap", pool_size=0, _probe=no_confinement)
    result = await forced_bwrap.run(CodeRunRequest("return 1", tools()))
    assert result.error is not None and result.error.kind == "sandbox-unavailable"
    assert "bwrap backend requested but unavailable: forced" in result.error.message
    await forced_bwrap.aclose()

    # The explicit opt-in runs unconfined, and says so.
    opted_in = PythonSandboxRuntime(pool_size=0, allow_unconfined=True, _probe=no_confinement)
    result = await run(opted_in, "return 1")
    assert ok(result) == 1
    assert result.meta["isolation"]["enforcement"] == "none"
    assert any("UNCONFINED" in note for note in result.meta["isolation"]["notes"])
    await opted_in.aclose()


def test_unconfined_backend_needs_the_explicit_opt_in() -> None:
    with pytest.raises(ValueError, match="allow_unconfined=True"):
        PythonSandboxRuntime(backend="unconfined")


async def test_invalid_binding_names_are_caller_misuse(runtime: PythonSandboxRuntime) -> None:
    with pytest.raises(TypeError):
        await runtime.run(CodeRunRequest("return 1", [CodeBindingNamespace("class", {})]))


# --- hostile children ---------------------------------------------------------------------------------

HOSTILE_PRELUDE = """
import json, os, socket, struct, sys, time
sock = socket.socket(fileno=int(sys.argv[1]))
def send(obj=None, raw=None):
    body = raw if raw is not None else json.dumps(obj).encode()
    sock.sendall(struct.pack(">I", len(body)) + body)
def recv():
    header = b""
    while len(header) < 4:
        header += sock.recv(4 - len(header))
    (n,) = struct.unpack(">I", header)
    body = b""
    while len(body) < n:
        body += sock.recv(n - len(body))
    return json.loads(body)
def framed(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body
def start():
    send(READY)
    recv()
def call(i, ns="tools", name="echo"):
    send({"t": "call", "id": i, "ns": ns, "name": name, "args": {}})
READY = {"t": "ready", "report": {"layers": [], "landlockAbi": None, "enforcement": "none", "notes": []}}
DONE = {"t": "done", "ok": True}
DEEP = b'{"t":"done","ok":true,"value":' + b"[" * 100000 + b"]" * 100000 + b"}"
boot = recv()
"""

HOSTILE: dict[str, tuple[str, str, str]] = {
    # name: (script, expected kind, expected message fragment)
    "completion-before-ready": ("send(DONE)", "worker-exit", "done frame before ready"),
    "completion-before-program": (
        "sock.sendall(framed(READY) + framed(DONE)); time.sleep(30)",
        "worker-exit",
        "protocol violation",
    ),
    "junk-json": ("start(); send(raw=b'{not json')", "worker-exit", "malformed frame"),
    "oversized-frame": (
        "start(); sock.sendall(struct.pack('>I', 1 << 31)); time.sleep(30)",
        "worker-exit",
        "exceeds the",
    ),
    "deep-json": (
        "start(); send(raw=DEEP)",
        "worker-exit",
        "nests deeper",
    ),
    "nan": (
        'send(READY); recv(); send(raw=b\'{"t":"done","ok":true,"value":NaN}\')',
        "worker-exit",
        "malformed frame",
    ),
    "lossy-completion": (
        'send(READY); recv(); send(raw=b\'{"t":"done","ok":true,"value":9007199254740993}\'); time.sleep(30)',
        "invalid-output",
        "program completion must be lossless JSON",
    ),
    "second-completion": (
        "start(); send(DONE); send(DONE); time.sleep(30)",
        "worker-exit",
        "a second completion",
    ),
    "reply-frame-from-child": (
        "start(); send({'t': 'reply', 'id': 99, 'ok': True, 'value': 1}); time.sleep(30)",
        "worker-exit",
        "unknown frame kind 'reply'",
    ),
    "duplicate-call-id": (
        "start(); call(1); call(1); time.sleep(30)",
        "worker-exit",
        "call id 1 is not greater than the previous id 1",
    ),
    "unknown-global": (
        "start(); call(1, ns='os', name='system'); time.sleep(30)",
        "worker-exit",
        "unknown binding global 'os'",
    ),
    "too-many-calls": (
        "start(); [call(i, name='slow') for i in range(1, 5)]; time.sleep(30)",
        "worker-exit",
        "more than 2 binding calls in flight",
    ),
    "unknown-done-kind": (
        "start(); send({'t': 'done', 'ok': False, 'kind': 'timeout', 'message': 'x'}); time.sleep(30)",
        "worker-exit",
        "not one a child may report",
    ),
    "exit-without-completion": (
        "start(); os._exit(7)",
        "worker-exit",
        "worker exited with code 7 before completing",
    ),
    "hang": ("start(); time.sleep(30)", "timeout", "wall-clock ceiling reached (1s)"),
    "stdout-flood": (
        "start(); os.write(1, b'x' * 100000); time.sleep(30)",
        "output-limit",
        "outer output exceeded 1024 bytes",
    ),
    "silent-before-ready": ("os._exit(5)", "worker-exit", "worker exited with code 5 during boot"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_child_frames_end_the_run_cleanly(name: str, tmp_path: Path) -> None:
    script, kind, fragment = HOSTILE[name]
    bootstrap = tmp_path / "hostile.py"
    bootstrap.write_text(HOSTILE_PRELUDE + script + "\n")

    async def slow(args: Any) -> Any:
        await asyncio.sleep(30)

    rt = PythonSandboxRuntime(
        backend="unconfined",
        allow_unconfined=True,
        pool_size=0,
        max_in_flight_calls=2,
        _bootstrap_path=str(bootstrap),
    )
    try:
        started = time.perf_counter()
        result = await run(rt, "return 1", tools(slow=slow), wall_seconds=1, output_bytes=1024, timeout=15)
        assert result.error is not None, result
        assert result.error.kind == kind, result.error
        assert fragment in result.error.message, result.error
        assert time.perf_counter() - started < 8
        if "pid" in result.meta:
            assert pid_gone(result.meta["pid"])
    finally:
        await rt.aclose()


async def test_runtime_survives_hostile_children(tmp_path: Path) -> None:
    """One runtime, hostile then normal: the host keeps working (no leaked state)."""
    bootstrap = tmp_path / "hostile.py"
    bootstrap.write_text(HOSTILE_PRELUDE + "start(); send(raw=b'junk')\n")
    hostile = PythonSandboxRuntime(
        backend="unconfined", allow_unconfined=True, pool_size=1, _bootstrap_path=str(bootstrap)
    )
    for _ in range(3):
        result = await run(hostile, "return 1", wall_seconds=5)
        assert result.error is not None and result.error.kind == "worker-exit"
    await hostile.aclose()
    normal = make_runtime()
    assert ok(await run(normal, "return 1")) == 1
    await normal.aclose()


async def test_read_paths_are_readable_but_not_writable(backend: str) -> None:
    # Directly under /tmp: after a uid drop the child must be able to traverse every ancestor.
    shared = Path(tempfile.mkdtemp(prefix="toolrt-test-shared-"))
    shared.chmod(0o755)
    (shared / "data.txt").write_text("hello")
    (shared / "data.txt").chmod(0o644)
    rt = make_runtime(backend, read_paths=[str(shared)])
    program = f"""
        text = open({str(shared / "data.txt")!r}).read()
        try:
            open({str(shared / "new.txt")!r}, 'w').write('x')
            wrote = True
        except OSError:
            wrote = False
        return [text, wrote]
    """
    try:
        text, wrote = ok(await run(rt, program))
        assert text == "hello"
        assert wrote is (backend == "unconfined")
        assert not (shared / "new.txt").exists() or backend == "unconfined"
    finally:
        await rt.aclose()
        shutil.rmtree(shared, ignore_errors=True)


async def test_prints_from_threads_do_not_interleave_frames(runtime: PythonSandboxRuntime) -> None:
    program = """
        import threading
        def spam(tag):
            for _ in range(200):
                print(tag * 3000)
        workers = [threading.Thread(target=spam, args=(tag,)) for tag in 'abcd']
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return 'ok'
    """
    result = await run(runtime, program)
    assert ok(result) == "ok"
    assert len(result.logs) == 800
    assert all(len(set(line)) == 1 and len(line) == 3000 for line in result.logs)
