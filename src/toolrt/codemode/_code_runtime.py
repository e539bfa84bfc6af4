"""The ``CodeRuntime`` seam: run a program against host-provided bindings, report what happened.

A Code Mode runtime knows nothing about tools. It receives a program and *binding namespaces* —
a global name (``tools``) whose members are async host functions taking and returning lossless
JSON — and returns a :class:`CodeRunResult`: the program's printed lines, its completion value,
or an error with a :data:`CodeRunErrorKind`. Program failures are result fields, and so is a request
whose fields have the wrong types (``invalid-request``); ``run`` raises only for caller misuse
(invalid binding names, a disposed runtime).

Names that cross into the program must be portable across the languages a runtime may host
(TypeScript and Python), so the same SDK text works for both::

    error_class = CodeErrorClass("ToolCallError", "toolName")
    validate_bindings([CodeBindingNamespace("tools", {"read": read}, error_class)])

No state survives between runs; :meth:`CodeRuntime.aclose` ends runs in flight.
"""

from __future__ import annotations

import asyncio
import keyword
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeAlias, runtime_checkable

from toolrt._abort import AbortSignal

__all__ = [
    "NO_VALUE",
    "PORTABLE_RESERVED_WORDS",
    "RESERVED_BINDING_GLOBALS",
    "RESERVED_MEMBER_NAME_PROPERTIES",
    "BindingAnswer",
    "BindingFunction",
    "CodeBindingNamespace",
    "CodeErrorClass",
    "CodeRunError",
    "CodeRunErrorKind",
    "CodeRunLimits",
    "CodeRunRequest",
    "CodeRunResult",
    "CodeRuntime",
    "IsolationReport",
    "RunClock",
    "validate_bindings",
]

CodeRunErrorKind: TypeAlias = Literal[
    "exception",
    "timeout",
    "abort",
    "worker-exit",
    "invalid-output",
    "output-limit",
    "cpu-limit",
    "memory-limit",
    "disk-limit",
    "value-limit",
    "sandbox-unavailable",
    "invalid-request",
]
"""Why a run failed. The first six are upstream's; the rest are the sandbox's own limits, and
``invalid-request`` a request whose fields have the wrong types (a ``bytes`` program, ``None``)."""


class _NoValue:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"

    def __bool__(self) -> bool:
        return False


NO_VALUE: Final = _NoValue()
"""The program completed without returning a value (distinct from returning ``None``/``null``)."""

BindingFunction: TypeAlias = Callable[[Any], Awaitable[Any]]
"""A host function a program calls: lossless JSON arguments in, lossless JSON out. It returns any
awaitable: a coroutine, an ``asyncio.Future`` a runtime can wait on with a done-callback instead of a
task, or (as the Code Mode bridge does) a :class:`BindingAnswer`. Calling it must not block; its
failure is the awaitable's."""


class BindingAnswer(asyncio.Future[Any]):
    """A future a binding answers with, which also tells one listener the moment it is settled.

    Why: a future's done-callbacks run one event-loop turn after it is resolved. A runtime that
    forwards each answer to a program in another process (the sandbox) would pay that turn on every
    binding call; with :meth:`when_settled` it sends the reply from inside the resolution instead.
    Awaiting it, and ``add_done_callback``, work as for any future.

    The listener runs once, synchronously, after ``set_result``, ``set_exception`` or a successful
    ``cancel``; an exception it raises goes to the loop's exception handler, never to whoever
    resolved the answer.
    """

    _listener: Callable[[BindingAnswer], object] | None = None

    def when_settled(self, listener: Callable[[BindingAnswer], object]) -> None:
        """Call ``listener(self)`` as soon as this answer is settled (now, if it already is)."""
        if self.done():
            self._tell(listener)
        else:
            self._listener = listener

    def set_result(self, result: Any, /) -> None:
        super().set_result(result)
        self._settled()

    def set_exception(self, exception: type | BaseException, /) -> None:
        super().set_exception(exception)
        self._settled()

    def cancel(self, msg: Any | None = None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled:
            self._settled()
        return cancelled

    def _settled(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            self._tell(listener)

    def _tell(self, listener: Callable[[BindingAnswer], object]) -> None:
        try:
            listener(self)
        except Exception as error:
            self.get_loop().call_exception_handler(
                {"message": "BindingAnswer listener failed", "exception": error, "future": self}
            )


@dataclass(frozen=True, slots=True)
class CodeErrorClass:
    """The program-side error a failed binding call raises: ``name`` with a ``member_name_property``
    naming the binding that failed (``ToolCallError`` with ``toolName``)."""

    name: str
    member_name_property: str


@dataclass(frozen=True, slots=True)
class CodeBindingNamespace:
    """One global the program sees (``name``), whose members are host ``functions``."""

    name: str
    functions: Mapping[str, BindingFunction]
    error_class: CodeErrorClass | None = None
    member_noun: str | None = None
    """What a member is called in the error a program gets for an unknown one: ``"tool"`` reads
    ``unknown tool "<name>"`` (as a native call does); ``None`` reads ``unknown binding
    "<global>.<name>"``. Either way the closest member names follow."""


@dataclass(frozen=True, slots=True)
class CodeRunLimits:
    """Per-run limits (``None`` keeps the runtime's default for that limit)."""

    wall_seconds: float | None = None
    cpu_seconds: float | None = None
    memory_bytes: int | None = None
    output_bytes: int | None = None
    value_bytes: int | None = None


class RunClock:
    """A run's wall clock, which whoever serves its binding calls can pause.

    Why: human time is not program time. While a sub-call waits for a person (an approval), the
    program only waits for the reply, so that wait must not spend its wall-clock budget. A runtime
    reads :meth:`paused_seconds` for its deadline and :meth:`subscribe` for resumes. Pauses nest
    (concurrent sub-calls may each wait): the clock runs again when every pause has been resumed.
    """

    __slots__ = ("_depth", "_listeners", "_paused_total", "_since")

    def __init__(self) -> None:
        self._depth = 0
        self._since = 0.0
        self._paused_total = 0.0
        self._listeners: list[Callable[[], object]] = []

    @property
    def paused(self) -> bool:
        """Whether at least one pause is in effect."""
        return self._depth > 0

    def pause(self) -> None:
        """Stop the run's wall clock until the matching :meth:`resume`."""
        if self._depth == 0:
            self._since = time.monotonic()
        self._depth += 1

    def resume(self) -> None:
        """End one pause; with the last one the clock runs again and subscribers are told."""
        if self._depth == 0:
            raise RuntimeError("RunClock.resume() without a matching pause()")
        self._depth -= 1
        if self._depth == 0:
            self._paused_total += time.monotonic() - self._since
            for listener in list(self._listeners):
                listener()

    def paused_seconds(self) -> float:
        """Seconds spent paused so far (the pause in effect included)."""
        if self._depth > 0:
            return self._paused_total + time.monotonic() - self._since
        return self._paused_total

    def subscribe(self, listener: Callable[[], object]) -> Callable[[], None]:
        """Call ``listener()`` whenever the clock runs again; returns the unsubscriber."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe


@dataclass(frozen=True, slots=True)
class CodeRunRequest:
    """One program to run, its bindings, an optional cancellation signal and limit overrides, and
    an optional :class:`RunClock` whose pauses do not count toward the wall-clock limit."""

    program: str
    bindings: Sequence[CodeBindingNamespace]
    signal: AbortSignal | None = None
    limits: CodeRunLimits | None = None
    clock: RunClock | None = None


@dataclass(frozen=True, slots=True)
class CodeRunError:
    """A program failure: its kind and a human-readable message."""

    kind: CodeRunErrorKind
    message: str


@dataclass(frozen=True, slots=True)
class IsolationReport:
    """What confinement a runtime achieved (honest enforcement: never claim more than ran).

    ``kind`` is where programs run (``process``, ``worker-thread``, ``in-process``); ``enforcement``
    is ``full``, ``partial`` or ``none``; ``layers`` lists the layers actually applied (e.g.
    ``rlimits``, ``uid-drop``, ``no-new-privs``, ``landlock``, ``seccomp``, ``bwrap``);
    ``landlock_abi`` the Landlock ABI in use; ``notes`` anything a user should know.
    """

    kind: str
    enforcement: Literal["full", "partial", "none"]
    layers: tuple[str, ...] = ()
    landlock_abi: int | None = None
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The report as JSON (for result meta and logs)."""
        return {
            "kind": self.kind,
            "enforcement": self.enforcement,
            "layers": list(self.layers),
            "landlockAbi": self.landlock_abi,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class CodeRunResult:
    """A finished run: printed ``logs``, the completion ``value`` (``NO_VALUE`` if none), an
    ``error`` if the run failed, and ``meta`` (e.g. the isolation achieved, timings)."""

    logs: tuple[str, ...] = ()
    value: Any = NO_VALUE
    error: CodeRunError | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class CodeRuntime(Protocol):
    """Runs programs for Code Mode (see the module docstring)."""

    @property
    def language(self) -> str:
        """``python`` or ``typescript`` (selects the SDK renderer and the ``run_code`` flavor)."""
        ...

    @property
    def isolation(self) -> IsolationReport:
        """What confinement this runtime achieves."""
        ...

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run one program. Failures (a mistyped request included) are results; raises only for
        caller misuse (invalid binding names, a disposed runtime)."""
        ...

    async def aclose(self) -> None:
        """End in-flight runs (they fail with ``abort``/``runtime disposed``) and release resources."""
        ...


_PORTABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_ECMASCRIPT_RESERVED = frozenset(
    (
        "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete",
        "do", "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "implements",
        "import", "in", "instanceof", "interface", "let", "new", "null", "package", "private", "protected",
        "public", "return", "static", "super", "switch", "this", "throw", "true", "try", "typeof", "var",
        "void", "while", "with", "yield", "arguments", "eval", "undefined", "NaN", "Infinity",
    )
)  # fmt: skip

PORTABLE_RESERVED_WORDS: frozenset[str] = (
    _ECMASCRIPT_RESERVED | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
)
"""Words no binding global or error class may use: ECMAScript's and Python's (soft ones included)."""

RESERVED_BINDING_GLOBALS: frozenset[str] = frozenset(
    {"console", "__dsh_main__", "__builtins__", "__name__", "__debug__", "print", "asyncio"}
)
"""Globals a runtime itself defines."""

RESERVED_MEMBER_NAME_PROPERTIES: frozenset[str] = frozenset(
    {"name", "message", "stack", "args", "with_traceback", "add_note"}
)
_DUNDER = re.compile(r"^__.+__$")


def _check_portable(kind: str, name: str) -> None:
    if not isinstance(name, str) or not _PORTABLE_NAME.match(name):
        raise TypeError(f"{kind} {name!r} must match [A-Za-z_][A-Za-z0-9_]*")
    if name in PORTABLE_RESERVED_WORDS:
        raise TypeError(f"{kind} {name!r} is a reserved word in a supported language")
    if name in RESERVED_BINDING_GLOBALS:
        raise TypeError(f"{kind} {name!r} is reserved by the runtime")


def validate_bindings(bindings: Sequence[CodeBindingNamespace]) -> None:
    """Raise ``TypeError`` for binding names a runtime cannot expose portably (caller misuse)."""
    seen: set[str] = set()
    for namespace in bindings:
        _check_portable("binding global", namespace.name)
        if namespace.name in seen:
            raise TypeError(f"binding global {namespace.name!r} is declared twice")
        seen.add(namespace.name)
        error_class = namespace.error_class
        if error_class is not None:
            _check_portable("error class", error_class.name)
            if error_class.name in seen:
                raise TypeError(f"error class {error_class.name!r} collides with a binding global")
            seen.add(error_class.name)
            member = error_class.member_name_property
            if (
                member in RESERVED_MEMBER_NAME_PROPERTIES
                or _DUNDER.match(member)
                or not _PORTABLE_NAME.match(member)
            ):
                raise TypeError(f"error class member name property {member!r} is reserved or not portable")
        for function_name, function in namespace.functions.items():
            if not isinstance(function_name, str) or not callable(function):
                raise TypeError(
                    f"binding {namespace.name}.{function_name!r} must be a callable with a string name"
                )
