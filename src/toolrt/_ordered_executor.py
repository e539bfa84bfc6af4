"""The ordered executor: many calls through the pipeline's stages, concurrently where that is safe.

Both schedulers of the project run on it: the agent loop's (one assistant message's tool calls,
:mod:`toolrt.loop._scheduler`) and Code Mode's (a ``run_code`` program's binding calls,
:mod:`toolrt.codemode._bridge`). The contract lives here and only here:

* **Prepare and run policy in submission order, one call at a time.** A call is created (its tool
  resolved, once, in the caller's scope) and classified when it reaches the head of the queue, just
  before it may start; ``on_start`` runs next (the ``tool/call`` record is written before any policy
  sees the call), then ``prepare``: pre-execute listeners, approval, guards. Policy is where a human
  is asked and where guards count calls (a guard that allows the first N calls of a turn), so it
  must see the calls in the order the model (or the program) made them, and never two at once:
  an approval prompt for call 2 must not appear while call 1's is open.
* **Overlap concurrency-safe dispatches, up to ``max_parallel``.** Only ``dispatch`` — the tool's
  body and its ``tools/execute`` wrappers — overlaps: that is where the time goes (I/O, sub-agents)
  and where overlap is harmless for a tool that declares itself safe for these arguments. The pool
  is the bodies still running; a call that has finished and waits for its commit holds no slot.
* **Exclusive calls are barriers.** A call that is not classified ``parallel`` (no classifier, a
  classifier that says no or fails, an unknown name) starts only when no body is running and every
  earlier call has committed, and nothing starts after it until it has committed itself: a write
  must not race the reads before it, and the reads after it must see what it wrote.
* **Commit in submission order.** Post-execute policy, the result record, deferred contexts and the
  caller's answer happen in submission order even when a later body finishes first: middleware and
  models read results by position, and a log whose results are out of order cannot be replayed.
  Commits never overlap a prepare, so policy observes one consistent sequence.
* **Abort.** Once the executor's signal fires no queued call starts: each is handed to
  ``on_abandon`` (the agent loop records an ``ABORTED_BEFORE_DISPATCH`` result for it; Code Mode
  answers the program without logging); started calls drain (their bodies see the signal) and
  commit. Every started call ends with exactly one result, whatever happens.

Two ways to drive it. :meth:`OrderedExecutor.run` drives a batch that is known up front in the
calling task (the agent loop). :meth:`OrderedExecutor.submit` takes calls as they arrive (a
program's bindings): a call that arrives while the executor is idle — nothing queued, started or
committing, no step in progress — runs prepare → dispatch → commit in one task of its own (the fast
lane, ``docs/decisions/0006-code-mode-fast-lane.md``: a sequential program's calls never wake a
driver); any other call queues for a driver task. Whichever lane runs them, prepares and commits
never overlap and commits follow submission order: while the fast lane prepares or commits the
driver starts nothing, a fast-lane call whose body ends while the driver is inside a later call's
``prepare`` waits for that prepare before it commits, and the fast-lane call sits at the head of
the commit queue, so nothing commits past it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable
from typing import Generic, Literal, TypeVar

from toolrt._abort import AbortSignal
from toolrt._execution import ToolExecution, ToolExecutionInput
from toolrt._pipeline import Pipeline
from toolrt._results import ToolExecutionResult, ToolFailure, ToolSuccess

__all__ = ["CallOutcome", "OrderedCall", "OrderedExecutor"]

CallOutcome = tuple[Literal["post-result", "final-result", "done"], ToolExecutionResult]
"""A call's ``(kind, result)`` before its commit: ``post-result`` still passes post-execute,
``final-result`` only gets finished, ``done`` is already finished (a call rejected before policy)."""

_YIELD_EVERY = 8
"""Started dispatches between yields to the loop (a yield per start costs more than it overlaps)."""


class OrderedCall:
    """One call submitted to an :class:`OrderedExecutor`, and how far it has come.

    Subclass it (with ``__slots__``) to carry a scheduler's own data beside the call. The executor
    fills in the rest; a scheduler reads it, never writes it.
    """

    __slots__ = ("exclusive", "execution", "flight", "inline", "input", "outcome", "rejection")

    def __init__(self, call: ToolExecutionInput, rejection: BaseException | None = None) -> None:
        self.input = call
        """What the caller asked for; created into :attr:`execution` just before the call may start."""
        self.rejection = rejection
        """Fail the call before policy with this error instead of running it (arguments that are not
        JSON): it is created, skips every policy and dispatch phase, and is always exclusive."""
        self.execution: ToolExecution | None = None
        """The pipeline's execution, once created (``None`` for a rejected or never-reached call)."""
        self.exclusive: bool | None = None
        """Whether the call is a barrier (``None`` until it is classified)."""
        self.outcome: CallOutcome | None = None
        """The settled ``(kind, result)`` when no running flight holds it."""
        self.flight: asyncio.Task[CallOutcome] | None = None
        """The task running the call's ``dispatch`` (driver lane only)."""
        self.inline = False
        """Whether the call took the fast lane (it then commits itself, never through the driver)."""

    def settled(self) -> bool:
        """Ready for the driver to commit (a fast-lane call is never: it commits itself)."""
        if self.inline:
            return False
        return self.outcome is not None or (self.flight is not None and self.flight.done())


_C = TypeVar("_C", bound=OrderedCall)


class OrderedExecutor(Generic[_C]):
    """Runs calls through ``stages`` with the ordering contract of this module's docstring.

    A scheduler subclasses it and overrides the three hooks: :meth:`on_start` (before a call's
    policy), :meth:`on_commit` (after its commit, in order) and :meth:`on_abandon` (a queued call
    that will never start because the signal fired).
    """

    def __init__(self, stages: Pipeline, *, signal: AbortSignal, max_parallel: int) -> None:
        self._stages = stages
        self._signal = signal
        self._max_parallel = max_parallel
        self._loop = asyncio.get_running_loop()  # per-call tasks: no lookup each time
        self._pending: deque[_C] = deque()  # submitted, not started
        self._commits: deque[_C] = deque()  # started, not committed (submission order)
        self._running = 0  # bodies still running: the pool
        self._exclusive_active = False  # an exclusive call has started and not yet committed
        self._starts = 0
        self._wake = asyncio.Event()
        self._driver: asyncio.Task[None] | None = None
        # The fast lane. ``_stepping`` (the driver is inside a step) and ``_inline_busy`` (the fast
        # lane is preparing or committing) keep the contract: no prepare or commit ever overlaps
        # another, whichever of the two lanes runs it.
        self._stepping = False
        self._inline_busy = False
        self._inline_task: asyncio.Task[None] | None = None
        self._lane_waiter: asyncio.Future[None] | None = None

    # --- hooks -----------------------------------------------------------------------------------

    def on_start(self, call: _C) -> None:
        """Called once per started call, in submission order, before its policy runs."""

    def on_commit(self, call: _C, result: ToolExecutionResult) -> Awaitable[None] | None:
        """Called once per started call with its final result, in submission order.

        Return an awaitable to hold the next commit back until it completes (back-pressure).
        """
        return None

    def on_abandon(self, call: _C) -> None:
        """Called, in submission order, for each queued call that will not start: the signal fired."""

    # --- submission ------------------------------------------------------------------------------

    def enqueue(self, call: _C) -> None:
        """Queue ``call`` for :meth:`run` (a batch known up front)."""
        self._pending.append(call)

    def submit(self, call: _C) -> None:
        """Start ``call`` now in a fast-lane task when the executor is idle, else queue it for the
        driver task (started on demand). Stop the stream by firing the signal, then :meth:`join`."""
        if self._idle():
            call.inline = True
            self._inline_busy = True  # held from now: a call arriving before the task starts must queue
            self._commits.append(call)
            # A task of its own, not the caller's: the caller may be cancelled (a program's run
            # ends), and a started call must still be committed (its body observes the signal).
            self._inline_task = self._loop.create_task(self._inline(call))
        else:
            self._pending.append(call)
            self._kick()

    # --- driving ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Drive in the calling task until every queued call is committed or abandoned.

        If the calling task is cancelled, end the calls with :meth:`cancel_started` and
        :meth:`abandon_queued`; if a hook raises, :meth:`wait_started` before re-raising.
        """
        await self._drive(serve=False)

    async def join(self) -> None:
        """After the signal fired: wait until the fast lane and the driver task have finished (every
        started call committed, every queued one abandoned). Shielded: a cancelled caller does not
        cut the drain short."""
        if self._inline_task is not None:
            await asyncio.shield(self._inline_task)
        if self._driver is not None:
            self._wake.set()
            await asyncio.shield(self._driver)

    async def join_within(self, bound_s: float) -> bool:
        """:meth:`join` for at most ``bound_s`` seconds (the runtime's timeout grace, when the task
        awaiting the stream was cancelled). Returns whether everything drained; if not, call
        :meth:`finish_started`. A further cancellation does not cut the bounded wait short."""
        joined = asyncio.ensure_future(self.join())
        deadline = self._loop.time() + bound_s
        while not joined.done():
            remaining = deadline - self._loop.time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait({joined}, timeout=remaining)
            except asyncio.CancelledError:
                continue  # the caller insists; the wait is bounded, so it still completes first
        if joined.done():
            return True
        joined.cancel()
        return False

    def finish_started(self) -> None:
        """A bounded :meth:`join_within` ran out: stop the lanes (their bodies get the cancellation
        and, under a deadline, the grace, then are left running and reported) and finish every
        started call now as aborted, in order, through :meth:`on_commit`: each still has exactly
        one result. Queued calls are abandoned."""
        for task in (self._inline_task, self._driver):
            if task is not None and not task.done():
                task.cancel()
        commits, self._commits = self._commits, deque()
        for call in commits:
            result = self._finish_now(call)
            if result is not None:
                self.on_commit(call, result)
        self.abandon_queued()

    def cancel_started(self) -> list[tuple[_C, ToolExecutionResult]]:
        """The task driving :meth:`run` was cancelled: cancel the running bodies and finish every
        started call now (a policy outcome already decided stays; post-execute cannot run any more;
        the rest are aborted). Returns the calls finished here with their results, in order."""
        finished: list[tuple[_C, ToolExecutionResult]] = []
        for call in self._commits:
            result = self._finish_now(call)
            if result is not None:
                finished.append((call, result))
        self._commits.clear()
        return finished

    def _finish_now(self, call: _C) -> ToolExecutionResult | None:
        """Cancel ``call``'s running body and give its result now: the one it already has, its
        policy outcome finished, or an abort; ``None`` when it never started or already finished."""
        flight = call.flight
        if flight is not None and not flight.done():
            flight.cancel()
        execution, outcome = call.execution, call.outcome
        if outcome is not None and outcome[0] == "done":
            return outcome[1]
        if execution is None or execution.frozen:
            return None
        if outcome is not None:
            return self._stages.finish(execution, outcome[1])
        return self._stages.finish_aborted(execution)

    def abandon_queued(self) -> None:
        """Hand every queued call to :meth:`on_abandon`, in order (after :meth:`cancel_started`)."""
        while self._pending:
            self.on_abandon(self._pending.popleft())

    async def drain_started(self, bound_s: float) -> None:
        """The task driving :meth:`run` was cancelled: cancel the running bodies and wait, up to
        ``bound_s`` seconds (the runtime's timeout grace, ``Pipeline.drain_s``), until they have
        ended, so their cleanup has run before :meth:`cancel_started` finishes them and the
        cancellation propagates. A further cancellation of the waiting task does not cut the drain
        short (it is bounded anyway); a body still running after the bound is left cancelled and
        finished as aborted."""
        flights = {
            call.flight for call in self._commits if call.flight is not None and not call.flight.done()
        }
        for flight in flights:
            flight.cancel()
        deadline = self._loop.time() + bound_s
        while flights:
            remaining = deadline - self._loop.time()
            if remaining <= 0:
                return
            try:
                _, flights = await asyncio.wait(flights, timeout=remaining)
            except asyncio.CancelledError:
                continue  # the caller insists; the drain is bounded, so it still completes first

    async def wait_started(self) -> None:
        """Wait for every running body to finish (fabricating no result)."""
        flights = [
            call.flight for call in self._commits if call.flight is not None and not call.flight.done()
        ]
        if flights:
            await asyncio.wait(flights)

    # --- the driver lane -------------------------------------------------------------------------

    def _kick(self) -> None:
        if self._driver is None:
            self._driver = asyncio.ensure_future(self._drive(serve=True))
        self._wake.set()

    def _idle(self) -> bool:
        return not (self._pending or self._commits or self._stepping or self._inline_busy)

    async def _drive(self, serve: bool) -> None:
        # ``serve``: a stream that ends only with the signal; otherwise a batch that ends when empty.
        while True:
            self._wake.clear()
            self._stepping = True
            try:
                progressed = await self._step()
            finally:
                self._stepping = False
                waiter, self._lane_waiter = self._lane_waiter, None
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
            if progressed:
                continue
            if not self._pending and not self._commits and (not serve or self._signal.aborted):
                return
            await self._wake.wait()

    async def _step(self) -> bool:
        """Do one unit of work; False when nothing can progress right now."""
        if self._inline_busy:
            return False  # the fast lane is preparing or committing; it wakes the driver when done
        commits = self._commits
        if commits and commits[0].settled():
            # The head stays queued until its result is final: cancelled inside an async
            # post-execute, it must still be found by :meth:`cancel_started`.
            await self._commit(commits[0])
            return True
        pending = self._pending
        if not pending:
            return False
        call = pending[0]
        if self._signal.aborted:
            pending.popleft()
            self.on_abandon(call)
            return True
        if call.exclusive is None:
            self._create(call)
        exclusive = call.exclusive
        if self._exclusive_active or (self._running if exclusive else self._running >= self._max_parallel):
            return False
        pending.popleft()
        self._exclusive_active = bool(exclusive)
        commits.append(call)
        if await self._prepare(call):
            assert call.execution is not None
            flight = self._loop.create_task(self._stages.dispatch(call.execution))
            self._running += 1
            flight.add_done_callback(self._landed)
            call.flight = flight
            self._starts += 1
            if self._starts % _YIELD_EVERY == 0 and pending:
                # Let started bodies run up to their first await before preparing more siblings, so
                # the overlap begins early instead of after every sibling is prepared.
                await asyncio.sleep(0)
        return True

    def _landed(self, flight: asyncio.Task[CallOutcome]) -> None:
        self._running -= 1
        self._wake.set()

    # --- the fast lane ---------------------------------------------------------------------------

    async def _inline(self, call: _C) -> None:
        try:
            if self._signal.aborted:
                self._commits.remove(call)
                self.on_abandon(call)
                return
            self._create(call)
            self._exclusive_active = bool(call.exclusive)
            if await self._prepare(call):
                assert call.execution is not None
                self._running += 1
                self._inline_busy = False
                if self._pending:
                    self._kick()  # queued calls may start beside this one (the pool allows it)
                try:
                    call.outcome = await self._stages.dispatch(call.execution)
                finally:
                    self._running -= 1
                self._inline_busy = True
                while self._stepping:  # the driver is inside a prepare: commits never overlap it
                    waiter = self._lane_waiter = self._loop.create_future()
                    await waiter
            assert self._commits[0] is call  # nothing commits past an uncommitted head
            await self._commit(call)
        finally:
            self._inline_busy = False
            if self._pending or self._commits:
                self._kick()

    # --- the stages, shared by both lanes --------------------------------------------------------

    def _create(self, call: _C) -> None:
        """Create and classify ``call`` once: every later stage runs the definition resolved here."""
        if call.rejection is not None:
            call.exclusive = True
            return
        execution, early = self._stages.create(call.input)
        call.execution = execution
        if early is not None:
            call.outcome = ("final-result", early)
        call.exclusive = self._stages.execution_mode(execution, call.input.arguments) == "exclusive"

    async def _prepare(self, call: _C) -> bool:
        """``on_start``, then policy when it has work; True when the call goes on to ``dispatch``
        (the shortcuts of :meth:`Pipeline.execute`: a call with no policy to consult skips it)."""
        self.on_start(call)
        stages = self._stages
        if call.rejection is not None:
            call.outcome = ("done", stages.reject(call.input, call.rejection))
            return False
        if call.outcome is not None:
            return False
        execution = call.execution
        assert execution is not None
        if not stages.needs_prepare(execution):
            return True
        kind, result = await stages.prepare(execution)
        if kind == "dispatch":
            return True
        assert result is not None
        call.outcome = (kind, result)
        return False

    async def _commit(self, call: _C) -> None:
        if call.outcome is not None:
            kind, result = call.outcome
        else:
            assert call.flight is not None
            kind, result = call.flight.result()
        if kind != "done":
            assert call.execution is not None
            committed = self._stages.commit(call.execution, kind, result)
            result = committed if isinstance(committed, ToolSuccess | ToolFailure) else await committed
        # Off the commit queue only now that the result is final (``_commit`` is always called on
        # the head); ``on_commit`` records it, so a cancellation from here on loses nothing.
        self._commits.popleft()
        if call.exclusive:
            self._exclusive_active = False
        held = self.on_commit(call, result)
        if held is not None:
            await held
