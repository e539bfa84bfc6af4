"""One program run, host side: sending the program, dispatching binding calls, enforcing the run's
limits, and deciding its one outcome.

Binding calls are dispatched concurrently (one task per ``call`` frame), at most
``max_in_flight_calls`` at once: the child applies backpressure, and a child exceeding the bound is a
protocol violation. The wall clock is a timer that counts running time only (the pauses of the
request's :class:`~toolrt.codemode.RunClock`, a human answering an approval, do not count); CPU and
(without bwrap's size-capped tmpfs) the disk quota are polled by a watchdog; output counts ``log``
frames and raw stdout/stderr alike. The first
outcome wins; a child that dies first is classified by :func:`.limits.classify_exit`. When a run
ends, binding calls still in flight are cancelled and awaited, and the child is killed and reaped,
and its descendants (under bwrap: the namespace init and the program) killed and awaited, before the
result is returned. Log entries are kept separately up to :data:`LOG_ENTRIES_KEPT`, then coalesced,
so the host holds about the output limit in log bytes whatever the number of prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from toolrt._errors import MAX_ECHO_CHARS, clip_text
from toolrt._json import NotLosslessJsonError, UnencodableTextError, snapshot_json
from toolrt.codemode._code_runtime import (
    NO_VALUE,
    BindingAnswer,
    CodeBindingNamespace,
    CodeRunError,
    CodeRunErrorKind,
    CodeRunRequest,
    CodeRunResult,
)
from toolrt.sandbox._backends.plan import Plan
from toolrt.sandbox._host.limits import (
    DISK_MAX_ENTRIES,
    Limits,
    classify_exit,
    dir_usage,
    disk_bytes_exceeded,
)
from toolrt.sandbox._host.process import BOOT_TIMEOUT, GONE_GRACE, BootFailure, Child, frame_name
from toolrt.sandbox._host.protocol import (
    LONE_SURROGATE,
    MAX_JSON_DEPTH,
    Call,
    ChildFrame,
    Done,
    Log,
    lone_surrogate_in,
    value_depth_exceeds,
    value_wire_bytes,
)

_EXIT_GRACE = 1.0
"""How long a child that sent ``done`` gets to exit by itself (frames meanwhile are still checked)."""
_WATCH_SECONDS = 0.05
"""Disk quota poll period; the CPU watchdog samples every other tick."""
_MIN_FRAME_BYTES = 16 << 20

LOG_ENTRIES_KEPT = 10_000
"""Log entries a run keeps as separate strings; later ones are coalesced into one last entry (their
texts joined by newlines, stored as UTF-8 bytes). Why: each separate entry costs the host ~60 bytes
of object overhead, so a program printing short lines could hold far more host memory than its
output limit. The rendered output (entries joined by newlines) is the same either way."""

LOG_ENTRY_BYTES = 1
"""What each log entry costs against the output limit beyond its text's UTF-8 bytes: the newline
joining it to the next in the rendered output. So an empty line is not free, the number of entries
is bounded by the output limit, and the host keeps at most about ``outputBytes`` of log bytes plus
:data:`LOG_ENTRIES_KEPT` entries' overhead (the child counts the same way)."""


@dataclass(frozen=True, slots=True)
class RunHost:
    """What a run needs from its runtime: settings, a warm child, a cold spawn."""

    max_in_flight_calls: int
    disk_bytes: int
    checkout: Callable[[Limits], Child | None]
    """A warm child for these limits, or ``None`` (then the run spawns a cold one)."""
    spawn: Callable[[Limits, float], Awaitable[Child]]
    """Spawn and boot a cold child for these limits within the timeout (raises :class:`BootFailure`)."""


@dataclass(slots=True)
class _Outcome:
    error: CodeRunError | None = None
    value: Any = NO_VALUE
    from_done: bool = False


class Run:
    """The host side of one program run (the listener of its child)."""

    def __init__(
        self,
        runtime: RunHost,
        request: CodeRunRequest,
        limits: Limits,
        plan: Plan,
    ) -> None:
        self.runtime = runtime
        self.request = request
        self.limits = limits
        self.plan = plan
        self.loop = asyncio.get_running_loop()
        self.namespaces: dict[str, CodeBindingNamespace] = {ns.name: ns for ns in request.bindings}
        self.logs: list[str] = []
        self.log_tail: bytearray | None = None
        """Entries past :data:`LOG_ENTRIES_KEPT`, newline-joined UTF-8 (one last entry)."""
        self.output_used = 0
        self.outcome: _Outcome | None = None
        self.decided: asyncio.Future[None] = self.loop.create_future()
        self.child: Child | None = None
        self.calls: set[asyncio.Task[None]] = set()
        self.answers: set[asyncio.Future[Any]] = set()
        self.in_flight = 0
        self.last_call_id = 0
        self.program_sent = False
        self.finalizing = False
        self.helpers: set[asyncio.Task[None]] = set()
        self.warm = False
        self.cpu_base: float | None = None
        self.cpu_used = 0.0
        self.started = time.monotonic()
        self.timer: asyncio.TimerHandle | None = None

    # -- deciding the outcome -------------------------------------------------------------------

    def decide(self, outcome: _Outcome) -> None:
        """First outcome wins, except that a protocol violation during the post-``done`` grace
        replaces a completion (a second completion, a frame after completion)."""
        current = self.outcome
        if current is not None:
            replace = (
                current.from_done
                and not self.finalizing
                and outcome.error is not None
                and outcome.error.kind == "worker-exit"
            )
            if not replace:
                return
        self.outcome = outcome
        if not self.decided.done():
            self.decided.set_result(None)
        if self.child is not None and not outcome.from_done:
            self.child.kill()

    def fail(self, kind: CodeRunErrorKind, message: str) -> None:
        """Decide the run as failed with ``kind`` and ``message`` (if nothing was decided yet)."""
        self.decide(_Outcome(CodeRunError(kind, message)))

    def dispose(self) -> None:
        """End the run because its runtime is closing."""
        self.fail("abort", "runtime disposed")

    def _on_abort(self, reason: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop may be closed already
            self.loop.call_soon_threadsafe(self.fail, "abort", str(reason))

    def _arm_deadline(self) -> None:
        """(Re)arm the wall-clock timer: the limit counts running time only, not the request's
        clock's pauses (a human answering an approval)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        clock = self.request.clock
        if self.outcome is not None or (clock is not None and clock.paused):
            return  # a resume re-arms it
        paused = clock.paused_seconds() if clock is not None else 0.0
        remaining = self.started + self.limits.wall + paused - time.monotonic()
        if remaining <= 0:
            self.fail("timeout", f"wall-clock ceiling reached ({self.limits.wall:g}s)")
            return
        self.timer = self.loop.call_later(remaining, self._arm_deadline)

    # -- the listener interface -----------------------------------------------------------------

    def on_violation(self, child: Child, reason: str) -> None:
        """The child broke the protocol: the run fails as ``worker-exit``."""
        self.fail("worker-exit", f"protocol violation: {reason}; worker killed")

    def on_output(self, child: Child, size: int) -> None:
        """Count the child's raw stdout/stderr against the output limit."""
        if self.outcome is not None:
            return
        self.output_used += size
        if self.output_used > self.limits.output:
            self.fail("output-limit", f"outer output exceeded {self.limits.output} bytes")

    def on_gone(self, child: Child) -> None:
        """The child ended: classify why, unless the run was already decided."""
        if self.outcome is not None:
            return  # decided already (after a completion, the exit is expected)
        task = asyncio.ensure_future(self._classify_gone(child))
        self.helpers.add(task)
        task.add_done_callback(self.helpers.discard)

    async def _classify_gone(self, child: Child) -> None:
        if not await child.await_exit(GONE_GRACE):
            child.kill()
            await child.await_exit(GONE_GRACE)
        await child.drained(channel=True)
        if self.outcome is not None:
            return  # the frames still buffered when it exited decided the run (e.g. its done)
        used = self.cpu_used
        if self.cpu_base is not None:
            used = max(used, child.cpu_seconds - self.cpu_base)
        error = classify_exit(
            child.status,
            limits=self.limits,
            boot=child.spec,
            program_cpu=used,
            child_cpu=child.cpu_seconds,
            lifetime=time.perf_counter() - child.started,
            stderr=bytes(child.stderr_tail),
            disk_bytes=self.runtime.disk_bytes,
        )
        self.decide(_Outcome(error))

    def on_frame(self, child: Child, frame: ChildFrame) -> None:
        """A frame from the child during the run: a log line, a binding call or the completion."""
        if isinstance(frame, Log):
            self._on_log(child, frame)
        elif isinstance(frame, Call):
            self._on_call(child, frame)
        elif isinstance(frame, Done):
            self._on_done(child, frame)
        else:
            child.violate(f"unexpected {frame_name(frame)} frame during a run")

    def _check_live(self, child: Child, kind: str) -> bool:
        if not self.program_sent:
            child.violate(f"{kind} frame before the program was sent")
            return False
        if self.outcome is not None and self.outcome.from_done:
            child.violate("a second completion" if kind == "done" else f"{kind} frame after the completion")
            return False
        return self.outcome is None

    def _on_log(self, child: Child, frame: Log) -> None:
        if not self._check_live(child, "log"):
            return
        self.output_used += frame.size + LOG_ENTRY_BYTES
        if self.output_used > self.limits.output:
            self.fail("output-limit", f"outer output exceeded {self.limits.output} bytes")
            return
        if len(self.logs) < LOG_ENTRIES_KEPT:
            self.logs.append(frame.text)
        elif self.log_tail is None:
            self.log_tail = bytearray(frame.text.encode("utf-8"))
        else:
            self.log_tail += b"\n"
            self.log_tail += frame.text.encode("utf-8")

    def kept_logs(self) -> tuple[str, ...]:
        """The run's log entries as the result carries them (the coalesced tail last)."""
        if self.log_tail is None:
            return tuple(self.logs)
        return (*self.logs, self.log_tail.decode("utf-8"))

    def _on_call(self, child: Child, frame: Call) -> None:
        if not self._check_live(child, "call"):
            return
        if frame.id <= self.last_call_id:
            child.violate(f"call id {frame.id} is not greater than the previous id {self.last_call_id}")
            return
        self.last_call_id = frame.id
        namespace = self.namespaces.get(frame.namespace)
        if namespace is None:
            child.violate(f"call to unknown binding global {frame.namespace[:60]!r}")
            return
        if self.in_flight >= self.runtime.max_in_flight_calls:
            child.violate(f"more than {self.runtime.max_in_flight_calls} binding calls in flight")
            return
        self.in_flight += 1
        function = namespace.functions.get(frame.name)
        if function is None:
            self._answer(child, _error_reply(frame.id, unknown_member(namespace, frame.name)))
            return
        try:
            awaitable = function(frame.args)
        except Exception as error:
            self._answer(child, _error_reply(frame.id, _message_of(error)))
            return
        if isinstance(awaitable, asyncio.Future):
            # A binding that answers with a future needs no task: the reply goes out from its
            # done-callback, or, for a BindingAnswer (the Code Mode bridge's), from inside its
            # resolution, one event-loop turn sooner still.
            self.answers.add(awaitable)
            answered = functools.partial(self._answered, child, frame.id)
            if isinstance(awaitable, BindingAnswer):
                awaitable.when_settled(answered)
            else:
                awaitable.add_done_callback(answered)
            return
        task = asyncio.ensure_future(self._serve(child, frame.id, awaitable))
        self.calls.add(task)
        task.add_done_callback(self.calls.discard)

    def _answered(self, child: Child, call_id: int, answer: asyncio.Future[Any]) -> None:
        self.answers.discard(answer)
        if answer.cancelled():  # the run ended first
            self.in_flight -= 1
            return
        error = answer.exception()
        self._answer(
            child,
            _error_reply(call_id, _message_of(error)) if error else _value_reply(call_id, answer.result()),
        )

    async def _serve(self, child: Child, call_id: int, awaitable: Awaitable[Any]) -> None:
        try:
            value = await awaitable
        except Exception as error:
            reply = _error_reply(call_id, _message_of(error))
        except BaseException:  # cancelled with its run (or worse): no reply, but the slot is free
            self.in_flight -= 1
            raise
        else:
            reply = _value_reply(call_id, value)
        self._answer(child, reply)

    def _answer(self, child: Child, reply: dict[str, Any]) -> None:
        self.in_flight -= 1
        if self.outcome is None:
            child.send(reply)

    def _on_done(self, child: Child, frame: Done) -> None:
        if not self._check_live(child, "done"):
            return
        limits = self.limits
        if frame.ok:
            if not frame.has_value:
                self.decide(_Outcome(from_done=True))
                return
            if lone_surrogate_in(frame.value):
                self.decide(_Outcome(CodeRunError("invalid-output", _LOSSY_SURROGATE), from_done=True))
                return
            try:
                value = snapshot_json(frame.value)
            except NotLosslessJsonError:
                self.decide(
                    _Outcome(
                        CodeRunError("invalid-output", "program completion must be lossless JSON"),
                        from_done=True,
                    )
                )
                return
            if value_wire_bytes(value) > limits.value:
                self.decide(
                    _Outcome(
                        CodeRunError("value-limit", f"completion value exceeded {limits.value} bytes"),
                        from_done=True,
                    )
                )
                return
            self.decide(_Outcome(value=value, from_done=True))
            return
        kind = frame.kind
        if kind == "exception":
            error = CodeRunError("exception", frame.message)
        elif kind == "invalid-output":
            # The child names the one reason the model can act on; any other reason reads as before.
            lossy = _LOSSY_SURROGATE if LONE_SURROGATE in frame.message else _LOSSY
            error = CodeRunError("invalid-output", lossy)
        elif kind == "value-limit":
            error = CodeRunError("value-limit", f"completion value exceeded {limits.value} bytes")
        elif kind == "memory-limit":
            error = CodeRunError(
                "memory-limit", f"memory limit reached ({limits.memory} bytes): {_last_line(frame.message)}"
            )
        else:
            error = CodeRunError("disk-limit", disk_bytes_exceeded(self.runtime.disk_bytes))
        self.decide(_Outcome(error, from_done=True))

    # -- running --------------------------------------------------------------------------------

    async def execute(self) -> CodeRunResult:
        """Run the program on a warm or cold child and return its one result (the child reaped)."""
        started = time.perf_counter()
        self.started = time.monotonic()
        clock = self.request.clock
        unsubscribe = (
            clock.subscribe(lambda: self.loop.call_soon(self._arm_deadline)) if clock is not None else None
        )
        self._arm_deadline()
        signal = self.request.signal
        detach = signal.add_callback(self._on_abort) if signal is not None else None
        child: Child | None = None
        boot_meta: dict[str, Any] = {}
        try:
            child = self.runtime.checkout(self.limits)
            self.warm = child is not None
            if child is None and self.outcome is None:
                child, boot_meta = await self._cold_start()
            if child is not None and self.outcome is None:
                await self._drive(child)
        finally:
            self.finalizing = True
            if unsubscribe is not None:
                unsubscribe()
            if self.timer is not None:
                self.timer.cancel()
            if detach is not None:
                detach()
            if child is not None:
                await child.close()
            await self._settle_tasks()
        return self._result(child, boot_meta, started)

    async def _cold_start(self) -> tuple[Child | None, dict[str, Any]]:
        remaining = max(self.limits.wall, 0.001)
        spawn = asyncio.ensure_future(self.runtime.spawn(self.limits, min(remaining, BOOT_TIMEOUT)))
        waiting: set[asyncio.Future[Any]] = {spawn, self.decided}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # The run itself is cancelled: the spawn (and the child it may have made) must not
            # outlive run(), or a cancelled run leaves a process behind.
            spawn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await spawn
            raise
        if not spawn.done():
            spawn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await spawn
            return None, {}
        try:
            return spawn.result(), {}
        except BootFailure as failure:
            self.decide(_Outcome(failure.error))
            return None, failure.meta

    async def _drive(self, child: Child) -> None:
        self.child = child
        child.decoder.max_frame_bytes = max(self.limits.value, self.limits.output, _MIN_FRAME_BYTES) + 65536
        child.listener = self
        if child.gone or child.broken:
            self.on_gone(child)
        limits = self.limits
        bindings = []
        for namespace in self.request.bindings:
            error_class = namespace.error_class
            bindings.append(
                {
                    "global": namespace.name,
                    "names": [name for name in namespace.functions if isinstance(name, str)],
                    "errorClass": (
                        {"name": error_class.name, "member": error_class.member_name_property}
                        if error_class is not None
                        else None
                    ),
                }
            )
        self.program_sent = True
        child.send(
            {
                "t": "run",
                "program": self.request.program,
                "bindings": bindings,
                "limits": {
                    "outputBytes": limits.output,
                    "valueBytes": limits.value,
                    "maxInFlight": self.runtime.max_in_flight_calls,
                },
            }
        )
        self.cpu_base = child.program_cpu()
        child.remember_tree()  # the program's processes, to be killed and awaited however it ends
        watcher = asyncio.ensure_future(self._watch(child))
        try:
            await self.decided
            if self.outcome is not None and self.outcome.from_done:
                await child.await_exit(_EXIT_GRACE)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self, child: Child) -> None:
        """Host-side CPU watchdog (precise, unlike whole-second RLIMIT_CPU, which stays as the
        backstop) and the work-dir disk quota: bytes and entries (under bwrap the tmpfs caps the
        bytes itself; the poll adds the entry cap)."""
        quota = self.runtime.disk_bytes
        budget = self.limits.cpu
        ticks = 0
        while True:
            # The first look is one period in: when the program starts its work dir is empty and it
            # has used no CPU, and a short run is spared a worker-thread hand-off and /proc reads.
            await asyncio.sleep(_WATCH_SECONDS)
            if self.outcome is not None:
                return
            workdir = child.workdir_view()
            if workdir is not None:
                # On a thread: walking up to 10,000 entries takes milliseconds, and every other run
                # and tool call shares this event loop.
                usage = await asyncio.to_thread(dir_usage, workdir, DISK_MAX_ENTRIES)
                excess = usage.excess(quota)
                if excess is not None:
                    self.fail("disk-limit", excess)
                    return
            if ticks % 2 == 0 and self.cpu_base is not None:
                cpu = child.program_cpu()
                if cpu is not None:
                    self.cpu_used = cpu - self.cpu_base
                    if self.cpu_used > budget:
                        self.fail("cpu-limit", f"CPU budget exhausted ({budget:g}s)")
                        return
            ticks += 1

    async def _settle_tasks(self) -> None:
        pending: list[asyncio.Future[Any]] = [*self.calls, *self.answers, *self.helpers]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _result(self, child: Child | None, boot_meta: dict[str, Any], started: float) -> CodeRunResult:
        outcome = self.outcome or _Outcome(CodeRunError("worker-exit", "worker ended without a result"))
        if child is not None and child.report is not None:
            isolation = child.report
        else:
            isolation = self.plan.predicted()
        meta: dict[str, Any] = {
            "isolation": isolation.as_json(),
            "backend": self.plan.backend,
            "warm": self.warm,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
        if child is not None:
            meta["pid"] = child.pid
            meta.update(child.diagnostics())
        meta.update(boot_meta)
        return CodeRunResult(logs=self.kept_logs(), value=outcome.value, error=outcome.error, meta=meta)


_LOSSY = "program completion must be lossless JSON"
_LOSSY_SURROGATE = f"{_LOSSY} ({LONE_SURROGATE})"


_SUGGESTIONS = 3
"""Closest member names an unknown-member error offers."""


def unknown_member(namespace: CodeBindingNamespace, name: str) -> str:
    """The error a program gets for calling a member its namespace lacks, with the closest names
    (``unknown tool "send_mail"; did you mean "send_email"?``)."""
    # Cut as a native unknown tool's name is (a call frame's name may hold thousands of characters).
    shown = clip_text(name, MAX_ECHO_CHARS)
    if namespace.member_noun is None:
        text = f'unknown binding "{namespace.name}.{shown}"'
    else:
        text = f'unknown {namespace.member_noun} "{shown}"'
    close = difflib.get_close_matches(name[:MAX_ECHO_CHARS], list(namespace.functions), _SUGGESTIONS)
    if close:
        text += "; did you mean " + " or ".join(f'"{match}"' for match in close) + "?"
    return text


def _value_reply(call_id: int, value: Any) -> dict[str, Any]:
    try:
        snapshot = snapshot_json(value)
        if value_depth_exceeds(snapshot, MAX_JSON_DEPTH):
            raise NotLosslessJsonError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    except UnencodableTextError:  # the lossless check refuses a lone surrogate itself
        return _error_reply(call_id, f"binding resolution must be lossless JSON ({LONE_SURROGATE})")
    except (NotLosslessJsonError, ValueError, RecursionError):
        return _error_reply(call_id, "binding resolution must be lossless JSON")
    return {"t": "reply", "id": call_id, "ok": True, "value": snapshot}


def _error_reply(call_id: int, message: str) -> dict[str, Any]:
    return {"t": "reply", "id": call_id, "ok": False, "message": message}


def _message_of(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:
        text = ""
    return text or type(error).__name__


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "MemoryError"
