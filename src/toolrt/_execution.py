"""The call as the pipeline sees it: :class:`ToolExecutionInput` in, :class:`ToolExecution` inside.

The caller describes a call with a :class:`ToolExecutionInput`. The runtime mints a fresh
:class:`ExecutionToken`, snapshots the arguments as frozen lossless JSON, and hands every listener and
the body one :class:`ToolExecution`. Its fields are read-only, with one exception: a ``tools/execute``
wrapper (a timeout policy, say) may replace ``signal`` for the duration of its ``next()`` call and
must restore it afterwards. Once the result is published the execution is frozen entirely.

The body receives the same object typed as :class:`ToolRunContext`, whose two extra methods only mean
something there: ``defer_context`` (attach a user message after the final result, even if the body
later fails) and ``conclude_turn`` (ask the agent loop to end the turn after this batch).

A call with a deadline gets a signal of its own, which fires when the caller's does or when the
deadline runs out. It is made only if the body asks for it (reading ``ctx.signal``): most bodies
never do, and fusing two signals costs more than the whole rest of a trivial call.

A call made on behalf of a running program (a Code Mode sub-call) may carry that program's
:class:`WaitClock`: the pipeline pauses it while the call waits for a person (an approval), so human
time never spends the program's budget. The core knows only this seam, not who fills it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from toolrt._abort import AbortController, AbortSignal, fuse_signals
from toolrt._content import ContextMessage

if TYPE_CHECKING:
    from toolrt._tool_definition import ToolDefinition

__all__ = [
    "BodySignal",
    "ExecutionToken",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolRunContext",
    "WaitClock",
]


class WaitClock(Protocol):
    """A clock that must not count time spent waiting for a person (``toolrt.codemode.RunClock``).

    Pauses nest: every :meth:`pause` is matched by one :meth:`resume`.
    """

    def pause(self) -> None:
        """Stop counting until the matching :meth:`resume`."""
        ...

    def resume(self) -> None:
        """End one pause."""
        ...


# Guards the moment a body's signal is made against the deadline firing it (a worker thread may ask
# for the signal while the event loop fires it). Taken only when a signal is made or fired.
_BODY_SIGNAL_LOCK = threading.Lock()
_UNFIRED: Any = object()


class BodySignal:
    """The signal of one timed body, made the first time the body reads ``ctx.signal``.

    Why lazily: a signal of its own (the caller's fused with the deadline's) costs a few
    microseconds, and most bodies never look at it. :meth:`abort` fires it, or, if the body has not
    asked yet, makes sure it is born fired.
    """

    __slots__ = ("_base", "_controller", "_detach", "_reason", "_signal")

    def __init__(self, base: AbortSignal) -> None:
        self._base = base
        self._signal: AbortSignal | None = None
        self._controller: AbortController | None = None
        self._detach: Callable[[], None] | None = None
        self._reason: object = _UNFIRED

    @property
    def base(self) -> AbortSignal:
        """The signal this one follows (the caller's, fused with any wrapper's)."""
        return self._base

    def get(self) -> AbortSignal:
        """The body's signal (made now if it was not yet)."""
        signal = self._signal
        if signal is not None:
            return signal
        with _BODY_SIGNAL_LOCK:
            signal = self._signal
            if signal is None:
                controller = AbortController()
                if self._reason is not _UNFIRED:
                    controller.abort(self._reason)
                signal, self._detach = fuse_signals(self._base, controller.signal)
                self._controller = controller
                self._signal = signal
        return signal

    def abort(self, reason: object) -> None:
        """Fire the body's signal with ``reason`` (the first reason wins)."""
        with _BODY_SIGNAL_LOCK:
            if self._reason is not _UNFIRED:
                return
            self._reason = reason
            controller = self._controller
        if controller is not None:
            controller.abort(reason)

    def release(self) -> None:
        """Stop following the base signal (a long-lived caller signal must not collect callbacks)."""
        detach, self._detach = self._detach, None
        if detach is not None:
            detach()


class ExecutionToken:
    """An opaque, unique identity for one execution: compare with ``is``/``==``, nothing else.

    Nested calls (Code Mode bindings, composite tools) pass their enclosing execution's token as
    ``parent``; it never crosses a model, log or process boundary.
    """

    __slots__ = ("__weakref__",)

    def __repr__(self) -> str:
        return f"<ExecutionToken {id(self):#x}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionInput:
    """A call to execute.

    ``signal`` is required: every call is cancellable by its caller. ``agent`` is the scope key of the
    calling agent (``None`` for an agent-less call, which sees only global tools). ``parent`` is the
    token of an enclosing execution for nested calls. ``root_call_id`` names the root model call of a
    nested tree and defaults to ``call_id``.
    """

    call_id: str
    name: str
    arguments: Any
    signal: AbortSignal
    agent: Hashable | None = None
    parent: ExecutionToken | None = None
    root_call_id: str | None = None
    wait_clock: WaitClock | None = None
    """The clock of the program this call is made for, paused while the call waits for a person."""


class ToolExecution:
    """One call inside the pipeline (see the module docstring for what may change and when).

    Beside what a body sees (:class:`ToolRunContext`), it carries the runtime's per-call
    bookkeeping, kept here to avoid a second object per call (decision 0005): four public
    attributes written by the pipeline only, and the operations the pipeline performs on the call
    (:meth:`open_signal` / :meth:`close_signal`, :meth:`lend_signal` / :meth:`return_signal`, for a
    timed body :meth:`lend_body_signal` / :meth:`body_signal` / :meth:`return_body_signal` /
    :meth:`keep_body_signal`, :meth:`rebind`, :meth:`take_finalizer`, :meth:`freeze`). Listeners may
    read them; nothing but the pipeline calls or writes them.
    """

    # A dict gives the public slots their docstrings (``help(ToolExecution)`` shows them).
    __slots__ = {
        "_agent": None,
        "_arguments": None,
        "_body_base": None,
        "_body_signal": None,
        "_call_id": None,
        "_caller": None,
        "_concluded": None,
        "_deferred": None,
        "_definition": None,
        "_finalizer": None,
        "_frozen": None,
        "_name": None,
        "_parent": None,
        "_resolved_at": None,
        "_root_call_id": None,
        "_signal": None,
        "_signal_writable": None,
        "_token": None,
        "_wait_clock": None,
        "body_invoked": "Whether the body was invoked (its result is then ``TOOL_ABORTED`` rather than "
        "``TOOL_ABORTED_BEFORE_DISPATCH`` when the caller aborts). Written by the pipeline only.",
        "canonical_result": "The result the pipeline's own body stage produced, or ``None``: a "
        "``tools/execute`` wrapper that returns it unchanged is not re-normalised. Written by the "
        "pipeline only.",
        "scope_chain": "The calling agent's scope chain, looked up by the pipeline the first time a "
        "listener needs it (``None`` until then). Written by the pipeline only.",
        "trace": "The call's span when a tracer is installed (a ``toolrt._tracing.CallTrace``), "
        "else ``None``. Written by the pipeline only.",
    }

    # Plain attributes, not properties: these four are read on every call's hot path.
    body_invoked: bool
    canonical_result: Any
    scope_chain: Any
    trace: Any

    def __init__(  # noqa: PLR0917 - positional on purpose: the pipeline builds one per call
        self,
        call_id: str,
        root_call_id: str,
        name: str,
        arguments: Any,
        agent: Hashable | None,
        parent: ExecutionToken | None,
        signal: AbortSignal,
        finalizer: Any = None,
        definition: ToolDefinition | None = None,
        resolved_at: int = 0,
        wait_clock: WaitClock | None = None,
    ) -> None:
        self._token = ExecutionToken()
        self._call_id = call_id
        self._root_call_id = root_call_id
        self._name = name
        self._arguments = arguments
        self._agent = agent
        self._parent = parent
        self._signal: AbortSignal | None = signal
        self._body_base: AbortSignal | None = None
        self._body_signal: BodySignal | None = None
        self._wait_clock = wait_clock
        self._deferred: list[ContextMessage] | None = None
        self._concluded = False
        self._frozen = False
        self._signal_writable = False
        # The caller's original signal (re-fused before the body) and the finalize_content
        # captured at creation.
        self._caller = signal
        self._finalizer = finalizer
        self.body_invoked = False
        self.canonical_result = None
        self.scope_chain = None
        self.trace = None
        # Resolved once, when the call is created: classification, the body, a wrapper's revalidated
        # success and a post-execute value replacement all use this one definition, unless the
        # registry moved on since ``resolved_at`` (its generation then), e.g. the tool was disposed.
        self._definition = definition
        self._resolved_at = resolved_at

    # --- the pipeline's interface (see the class docstring) -------------------------------------

    @property
    def caller_signal(self) -> AbortSignal:
        """The caller's own signal (``ToolExecutionInput.signal``): what ``signal`` starts as and
        returns to after the ``tools/execute`` wrappers."""
        return self._caller

    @property
    def resolved_at(self) -> int:
        """The registry generation at which :attr:`definition` was resolved."""
        return self._resolved_at

    @property
    def concludes_turn(self) -> bool:
        """Whether the body called :meth:`conclude_turn`."""
        return self._concluded

    @property
    def deferred_contexts(self) -> Sequence[ContextMessage]:
        """The messages the body attached with :meth:`defer_context`, in order."""
        return self._deferred or ()

    def rebind(self, definition: ToolDefinition | None, generation: int) -> None:
        """Record ``definition`` as this call's, resolved again at registry ``generation`` (the
        pipeline does so when the registry moved on since :attr:`resolved_at`)."""
        self._definition = definition
        self._resolved_at = generation

    def open_signal(self) -> None:
        """Let ``tools/execute`` wrappers replace ``signal`` (until :meth:`close_signal`)."""
        self._signal_writable = True

    def close_signal(self) -> None:
        """End the wrappers' turn: ``signal`` is the caller's again and may no longer be replaced
        (unless a detached body still holds its own signal)."""
        self._signal_writable = False
        if self._body_base is None:
            self._signal = self._caller

    def lend_signal(self, signal: AbortSignal) -> bool:
        """Make ``signal`` the one the body sees, which nobody may replace until
        :meth:`return_signal`. Returns whether wrappers could replace it before (pass it back)."""
        writable = self._signal_writable
        self._signal = signal
        self._signal_writable = False
        return writable

    def return_signal(self, lent: AbortSignal, signal: AbortSignal, writable: bool) -> None:
        """Put ``signal`` back (replaceable again if ``writable``) unless something still owns
        ``lent``: ``signal`` was changed since it was lent, or the call is already published."""
        if self._signal is lent and not self._frozen:
            self._signal = signal
            self._signal_writable = writable

    def lend_body_signal(self, base: AbortSignal) -> bool:
        """Like :meth:`lend_signal`, for a timed body: its signal follows ``base`` and is made only
        when someone needs it (:meth:`body_signal`). Returns the writability to pass back to
        :meth:`return_body_signal`."""
        writable = self._signal_writable
        self._signal = None
        self._body_base = base
        self._body_signal = None
        self._signal_writable = False
        return writable

    @property
    def lends_body_signal(self) -> bool:
        """Whether a timed body's signal is lent (:meth:`lend_body_signal`)."""
        return self._body_base is not None

    def body_signal(self) -> BodySignal:
        """The lent timed body's :class:`BodySignal` (made now if it was not yet)."""
        body = self._body_signal
        if body is None:
            base = self._body_base
            if base is None:
                raise RuntimeError("no timed body signal is lent")
            with _BODY_SIGNAL_LOCK:
                body = self._body_signal
                if body is None:
                    body = self._body_signal = BodySignal(base)
        return body

    def return_body_signal(self, signal: AbortSignal, writable: bool) -> None:
        """End a timed body's turn: ``signal`` is the one wrappers see again."""
        body = self._body_signal
        if body is not None:
            body.release()
        if not self._frozen:
            self._body_base = None
            self._body_signal = None
            self._signal = signal
            self._signal_writable = writable

    def keep_body_signal(self) -> None:
        """A timed body goes on running (detached, or on a worker thread after a cancellation):
        it keeps its own signal, which has fired, so it no longer needs to follow the caller's."""
        body = self._body_signal
        if body is not None:
            body.release()

    @property
    def wait_clock(self) -> WaitClock | None:
        """The clock to pause while this call waits for a person (``ToolExecutionInput.wait_clock``)."""
        return self._wait_clock

    def take_finalizer(self) -> Any:
        """The tool's ``finalize_content`` captured at creation, or ``None``; it applies at most
        once, so taking it clears it (the pipeline also drops it for a call that never runs)."""
        finalizer = self._finalizer
        self._finalizer = None
        return finalizer

    def freeze(self) -> None:
        """Mark the result published: from now on every field is final."""
        self._frozen = True

    # --- what a body sees -------------------------------------------------------------------------

    @property
    def token(self) -> ExecutionToken:
        """This execution's unique identity."""
        return self._token

    @property
    def call_id(self) -> str:
        """The model's id for this call (``<outer>:code:<n>`` for Code Mode sub-calls)."""
        return self._call_id

    @property
    def root_call_id(self) -> str:
        """The id of the root model call of a nested tree (``call_id`` for direct calls)."""
        return self._root_call_id

    @property
    def name(self) -> str:
        """The tool name as the model called it."""
        return self._name

    @property
    def arguments(self) -> Any:
        """The frozen lossless snapshot of the arguments (``None`` if they could not be snapshotted)."""
        return self._arguments

    @property
    def agent(self) -> Hashable | None:
        """The calling agent's scope key, or ``None``."""
        return self._agent

    @property
    def parent(self) -> ExecutionToken | None:
        """The enclosing execution's token for nested calls."""
        return self._parent

    @property
    def definition(self) -> ToolDefinition | None:
        """The definition this call runs, resolved in the caller's scope when the call was created
        (``None`` for a name the caller cannot execute: unknown, or collapsed under Code Mode)."""
        return self._definition

    @property
    def signal(self) -> AbortSignal:
        """The cancellation signal: the caller's, a wrapper's replacement, or the body's fused one."""
        signal = self._signal
        if signal is None:
            return self.body_signal().get()
        return signal

    @signal.setter
    def signal(self, value: AbortSignal) -> None:
        if not self._signal_writable or self._frozen:
            raise AttributeError(
                "cannot set ToolExecution.signal: only a tools/execute wrapper may replace it"
            )
        if not isinstance(value, AbortSignal):
            raise TypeError("ToolExecution.signal must be an AbortSignal")
        self._signal = value

    def defer_context(self, message: ContextMessage) -> None:
        """Attach ``message`` after this call's final result, even if the body later fails.

        Deferred contexts come before contexts added by wrappers and post-execute policy. A blocked
        result drops them (the policy that blocked decides what the model reads).
        """
        if self._frozen:
            raise RuntimeError("defer_context() called after the execution finished")
        if self._deferred is None:
            self._deferred = []
        self._deferred.append(message)

    def conclude_turn(self) -> None:
        """Mark a successful result of this call as concluding the agent's turn."""
        if self._frozen:
            raise RuntimeError("conclude_turn() called after the execution finished")
        self._concluded = True

    @property
    def frozen(self) -> bool:
        """Whether the result has been published (every field is then final)."""
        return self._frozen

    def __repr__(self) -> str:
        return f"<ToolExecution {self._name!r} call_id={self._call_id!r} agent={self._agent!r}>"


class ToolRunContext(Protocol):
    """What a tool body receives beside its arguments (the :class:`ToolExecution` itself)."""

    @property
    def token(self) -> ExecutionToken: ...
    @property
    def call_id(self) -> str: ...
    @property
    def root_call_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> Any: ...
    @property
    def agent(self) -> Hashable | None: ...
    @property
    def parent(self) -> ExecutionToken | None: ...
    @property
    def signal(self) -> AbortSignal: ...
    def defer_context(self, message: ContextMessage) -> None: ...
    def conclude_turn(self) -> None: ...
