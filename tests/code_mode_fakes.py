"""Code Mode test kit: a scriptable in-process ``CodeRuntime`` and the shared Code Mode fixtures.

FOR TESTS ONLY. :class:`FakeRuntime` runs no program at all: each test scripts what "the program"
does by setting :attr:`FakeRuntime.behavior`, an ``async (request) -> CodeRunResult`` that calls the
bindings directly (upstream ``code-mode.spec.ts``'s ``FakeRuntime extends CodeRuntime``). It isolates
nothing and says so (``IsolationReport(kind="in-process", enforcement="none")``); it is never offered
to users.

Binding calls are plain coroutines. A JavaScript binding call starts *synchronously* (it is queued the
moment the program calls it); a Python coroutine does nothing until it is scheduled. So:

* :func:`call` — ``await tools.name(args)``: call a binding by name and await it.
* :func:`submit` — ``tools.name(args)`` without ``await`` (``Promise.all`` members, fire-and-forget):
  schedule the call as a task; calls submitted in order are queued in that order.
* :func:`outcome` — ``promise.then(() => 'resolved', error => error.message)``: await a call or a task
  and capture ``Resolved(value)`` or ``Rejected(message)`` instead of raising.

Everything else here builds real toolrt objects: :func:`setup` (runtime + system prompt wired the way
an agent deployment wires them), :func:`register_echo` (upstream ``registerEcho``), :class:`Gated`
(upstream ``registerGated``: a tool whose calls park until released or aborted), :func:`run_code`
(upstream ``runCode``) and :func:`eventually` (``expect.poll``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolrt import AbortSignal, ToolExecutionInput, ToolExecutionResult, ToolRuntime, define_tool
from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain
from toolrt.codemode._code_runtime import (
    BindingFunction,
    CodeRunRequest,
    CodeRunResult,
    IsolationReport,
)
from toolrt.loop import SessionLog
from toolrt.lowlevel import thaw

__all__ = [
    "AGENT",
    "Behavior",
    "FakeRuntime",
    "Gated",
    "Rejected",
    "Resolved",
    "Setup",
    "call",
    "eventually",
    "functions",
    "outcome",
    "register_echo",
    "run_code",
    "run_program",
    "session_events",
    "setup",
    "setup_with_echo",
    "submit",
]

AGENT = "agent-1"
"""The agent key the bridge tests bind a session for (upstream ``fakeAgent()``)."""

Behavior = Callable[[CodeRunRequest], Awaitable[CodeRunResult]]


async def _no_output(request: CodeRunRequest) -> CodeRunResult:
    return CodeRunResult()


class FakeRuntime:
    """A scriptable in-process ``CodeRuntime`` (the seam of :mod:`toolrt.codemode._code_runtime`).

    ``behavior`` defaults to "the program printed nothing and returned nothing". Every request is
    recorded in :attr:`requests` (upstream ``lastRequest``) before ``behavior`` runs.
    """

    def __init__(self, language: str = "typescript", behavior: Behavior | None = None) -> None:
        self.language = language
        self.isolation = IsolationReport(kind="in-process", enforcement="none")
        self.behavior: Behavior = behavior if behavior is not None else _no_output
        self.requests: list[CodeRunRequest] = []
        self.closed = False

    @property
    def last_request(self) -> CodeRunRequest | None:
        return self.requests[-1] if self.requests else None

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        self.requests.append(request)
        return await self.behavior(request)

    async def aclose(self) -> None:
        self.closed = True


# --- calling bindings ----------------------------------------------------------------------------


def functions(request: CodeRunRequest) -> Mapping[str, BindingFunction]:
    """The ``tools`` namespace's functions (``request.bindings[0].functions``)."""
    return request.bindings[0].functions


async def call(request: CodeRunRequest, name: str, arguments: Any) -> Any:
    """``await tools[name](arguments)``: raises the binding's failure as the runtime would see it."""
    return await functions(request)[name](arguments)


def submit(request: CodeRunRequest, name: str, arguments: Any) -> asyncio.Task[Any]:
    """``tools[name](arguments)`` without awaiting: the call is queued as soon as the loop runs it."""
    return asyncio.ensure_future(functions(request)[name](arguments))


@dataclass(frozen=True)
class Resolved:
    value: Any


@dataclass(frozen=True)
class Rejected:
    message: str


async def outcome(awaitable: Awaitable[Any], timeout: float = 5.0) -> Resolved | Rejected:
    """Await a binding call (or its task) and capture how it settled; a hang fails after ``timeout``."""
    try:
        return Resolved(await asyncio.wait_for(awaitable, timeout))
    except TimeoutError:
        raise
    except Exception as error:
        return Rejected(str(error))


async def eventually(predicate: Callable[[], bool], timeout: float = 2.0) -> bool:
    """Poll ``predicate`` until it holds (``True``) or ``timeout`` passes (``False``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.001)
    return True


# --- deployment setup ----------------------------------------------------------------------------


@dataclass
class Setup:
    """One deployment: the tool runtime, its system prompt, the fake code runtime (if mounted) and an
    in-memory session log bound for :data:`AGENT`."""

    runtime: ToolRuntime
    prompt: SystemPrompt
    code: FakeRuntime
    log: SessionLog = field(default_factory=SessionLog.in_memory)

    def __post_init__(self) -> None:
        self.runtime.bind_session(AGENT, self.log.append)


def setup(
    mode: str = "code",
    *,
    language: str | None = "typescript",
    tool_order: list[str] | None = None,
    max_parallel_sub_calls: int | None = None,
) -> Setup:
    """Upstream ``setup()``: a runtime in ``mode`` with a fake code runtime of ``language`` mounted
    (``language=None``: no code runtime), wired to a :class:`SystemPrompt` sharing its scope chain.

    ``Setup.code`` is always a :class:`FakeRuntime`; with ``language=None`` it is simply not mounted.
    """
    fake = FakeRuntime(language or "typescript")
    options: dict[str, Any] = {"mode": mode}
    if language is not None:
        options["code_runtime"] = fake
    if max_parallel_sub_calls is not None:
        options["max_parallel_sub_calls"] = max_parallel_sub_calls
    runtime = ToolRuntime(**options)
    prompt = SystemPrompt(tool_order, chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    return Setup(runtime, prompt, fake)


def register_echo(
    target: Any, name: str = "echo", *, safe: bool = False, **overrides: Any
) -> list[dict[str, Any]]:
    """Upstream ``registerEcho``: required ``value: string``, returns ``"<name>:<value>"``.

    ``target`` is a runtime or a scope. Returns the (thawed) arguments each call received.
    ``safe=True`` declares it concurrency-safe. The body is ``async``: it runs on the event loop.
    """
    calls: list[dict[str, Any]] = []

    async def execute(args: Any, ctx: Any) -> str:
        calls.append(thaw(args))
        return f"{name}:{args['value']}"

    _register_text_tool(target, name, f"Echo tool {name}.", "value", execute, safe=safe, **overrides)
    return calls


def _register_text_tool(
    target: Any, name: str, description: str, field: str, execute: Any, *, safe: bool, **overrides: Any
) -> None:
    """Register a tool taking one required string ``field`` and rendering its string value as text;
    ``safe=True`` declares it concurrency-safe; ``overrides`` replace :func:`define_tool` options.
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": {field: {"type": "string", "required": True}},
        "output": {
            "schema": {"type": "string"},
            "render": lambda _args, value: [{"type": "text", "text": value}],
        },
        "execute": execute,
    }
    if safe:
        options["is_concurrency_safe"] = lambda _args: True
    options.update(overrides)
    target.register(define_tool(**options))


def setup_with_echo(mode: str = "code", **options: Any) -> Setup:
    """:func:`setup` (``options`` as there) with :func:`register_echo`'s ``echo`` registered globally."""
    deployment = setup(mode, **options)
    register_echo(deployment.runtime)
    return deployment


class Gated:
    """Upstream ``registerGated``: a tool whose calls park until released — or until their signal
    aborts (like a real tool), so a run's settlement can always drain it.

    ``order`` records ``start:<id>`` / ``end:<id>``; ``live`` counts parked bodies and ``peak`` its
    maximum; ``release(id)`` releases one parked call (the oldest when ``id`` is omitted).
    """

    def __init__(self, target: Any, name: str, *, safe: bool) -> None:
        self.name = name
        self.order: list[str] = []
        self.live = 0
        self.peak = 0
        self.aborted: list[str] = []
        self._gates: dict[str, asyncio.Event] = {}

        async def execute(args: Any, ctx: Any) -> str:
            key = args["id"]
            self.order.append(f"start:{key}")
            self.live += 1
            self.peak = max(self.peak, self.live)
            gate = self._gates[key] = asyncio.Event()

            def on_abort(_reason: object) -> None:
                self.aborted.append(key)
                gate.set()

            remove = ctx.signal.add_callback(on_abort)
            try:
                await gate.wait()
            finally:
                remove()
                del self._gates[key]
                self.live -= 1
            self.order.append(f"end:{key}")
            return f"{name}:{key}"

        _register_text_tool(target, name, f"Gated tool {name}.", "id", execute, safe=safe)

    def parked(self) -> list[str]:
        return list(self._gates)

    def release(self, key: str | None = None) -> None:
        if key is None:
            key = next(iter(self._gates))
        self._gates[key].set()

    def release_all(self) -> None:
        for gate in self._gates.values():
            gate.set()


# --- running run_code ----------------------------------------------------------------------------


async def run_program(deployment: Setup, behavior: Any, *args: Any, **options: Any) -> ToolExecutionResult:
    """Install ``behavior`` as the fake runtime's program, then :func:`run_code` (with the rest)."""
    deployment.code.behavior = behavior
    return await run_code(deployment.runtime, *args, **options)


def run_code(
    runtime: ToolRuntime,
    code: str = "program",
    *,
    agent: Hashable | None = None,
    signal: AbortSignal | None = None,
    description: str | None = "Run the test program",
    call_id: str = "call-1",
    root_call_id: str | None = None,
    timeout: float = 10.0,
) -> Awaitable[ToolExecutionResult]:
    """Upstream ``runCode``: execute ``run_code`` through the pipeline, as the agent loop would.

    ``description=None`` omits the argument. A run still going after ``timeout`` seconds fails the
    test (a scheduler regression hangs for seconds, not forever).
    """
    arguments: dict[str, Any] = {"code": code}
    if description is not None:
        arguments["description"] = description
    return asyncio.wait_for(
        runtime.execute(
            ToolExecutionInput(
                call_id=call_id,
                name="run_code",
                arguments=arguments,
                signal=signal if signal is not None else AbortSignal(),
                agent=agent,
                root_call_id=root_call_id,
            )
        ),
        timeout,
    )


def session_events(log: SessionLog, kind: str) -> list[dict[str, Any]]:
    """The (thawed) ``data`` of every logged event of type ``kind``, in log order."""
    return [thaw(event.data) for event in log.events() if event.type == kind]
