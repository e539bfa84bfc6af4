"""The approval service: answers ``Ask`` decisions, with an audit trail.

::

    approvals = Approvals(audit=session.append)
    approvals.answerer(rule_answerer([ApprovalRule("read_*", "allowed-once")]))
    approvals.answerer(terminal_answerer())           # ask a human for everything else
    runtime = ToolRuntime(approval=approvals)

Answerers form a waterfall: each receives ``(request, next)`` and either answers or delegates.
With no answerer left the outcome is ``unavailable`` (a denial). An aborted caller signal ends the
wait with ``cancelled`` — whatever an answerer is doing — so a human who walked away never holds an
agent hostage after the user pressed stop.

**The wait deadline.** Nobody answering is not a yes either: a request still unanswered after
``wait_timeout_ms`` (default :data:`DEFAULT_APPROVAL_WAIT_MS`, 300,000 ms = 5 minutes;
``UNBOUNDED`` waits for ever) ends ``expired``, and the model reads that the approval wait ran out
and the call was not run. It is human time, so it is separate from the program's clock and from the
call's tool deadline: neither runs while a person decides (a Code Mode program's wall clock is
paused for the wait, and a tool deadline starts with the body, after the approval).

**Binding.** Every request carries the frozen argument snapshot that will run and its
``fingerprint`` (tool name + canonical JSON of the arguments). An ``allowed-once`` covers exactly that
execution; the pipeline cannot change its arguments afterwards. Answerers that *remember* a decision
("always allow this exact call") key it by fingerprint, so a call with different arguments is
never covered by it. Each request appends ``approval/asked`` and ``approval/decided`` audit events.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import logging
import sys
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from toolrt._approval_request import ApprovalOutcome, ApprovalRequest
from toolrt._events import Disposer, EventBus, EventSink, Listener, ListenerOwner
from toolrt._json import is_lossless_json, js_json_dumps, js_number, thaw
from toolrt._registry import is_valid_timeout_ms
from toolrt._tool_definition import UNBOUNDED, Unbounded

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "DEFAULT_APPROVAL_WAIT_MS",
    "ApprovalRule",
    "Approvals",
    "describe_request",
    "fingerprint",
    "rule_answerer",
    "terminal_answerer",
]

logger = logging.getLogger("toolrt")
Answerer = Callable[[ApprovalRequest, Callable[[], Awaitable[ApprovalOutcome]]], Any]
_OUTCOMES = frozenset({"allowed-once", "rejected", "cancelled", "unavailable", "expired"})

DEFAULT_APPROVAL_WAIT_MS = 300_000
"""How long an approval request waits for an answer before it ends ``expired`` (5 minutes): long
enough to read a call card and think, short enough that an unattended agent does not hang for ever."""


def fingerprint(tool_name: str, arguments: Any) -> str:
    """A stable identity for "this tool with exactly these arguments" (sha256 of canonical JSON)."""
    canonical = js_json_dumps(_sorted(arguments))
    return hashlib.sha256(f"{tool_name}\0{canonical}".encode("utf-8", "surrogatepass")).hexdigest()


def _sorted(value: Any) -> Any:
    """Key-sorted copy so two equal objects written in different key orders fingerprint alike."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list | tuple):
        return [_sorted(item) for item in value]
    return value


class Approvals(ListenerOwner):
    """An :class:`toolrt.ApprovalService` built from a waterfall of answerers."""

    def __init__(
        self,
        *,
        audit: EventSink | None = None,
        wait_timeout_ms: float | Unbounded = DEFAULT_APPROVAL_WAIT_MS,
    ) -> None:
        super().__init__()
        if wait_timeout_ms is not UNBOUNDED and (
            wait_timeout_ms is None or not is_valid_timeout_ms(wait_timeout_ms)
        ):
            raise ValueError(
                f"wait_timeout_ms must be a positive finite number or UNBOUNDED, got {wait_timeout_ms!r}"
            )
        self._answerers: tuple[Listener, ...] = ()
        self._audit = audit
        self._sessions: dict[Hashable, EventSink] = {}
        self._wait_timeout_ms = wait_timeout_ms

    @property
    def wait_timeout_ms(self) -> float | Unbounded:
        """How long a request waits for an answer before it ends ``expired`` (``UNBOUNDED``: for ever)."""
        return self._wait_timeout_ms

    def bind_session(self, agent: Hashable, sink: EventSink) -> Disposer:
        """Route ``agent``'s audit events to ``sink`` (its session log) instead of the default sink.

        :class:`toolrt.loop.Agent` binds its session automatically.
        """
        self._sessions[agent] = sink

        def unbind() -> None:
            if self._sessions.get(agent) is sink:
                del self._sessions[agent]

        return Disposer(unbind, self)

    def answerer(self, answerer: Answerer, *, prepend: bool = False) -> Disposer:
        """Add an answerer: ``answerer(request, next)`` returns an outcome or ``await next()``."""
        if not callable(answerer):
            raise TypeError("an approval answerer must be callable (request, next) -> outcome")
        listener = Listener(answerer, None)
        self._answerers = (listener, *self._answerers) if prepend else (*self._answerers, listener)

        def remove() -> None:
            self._answerers = tuple(item for item in self._answerers if item is not listener)

        return Disposer(remove, self)

    async def request(self, request: ApprovalRequest) -> ApprovalOutcome:
        """Ask the answerers; ``cancelled`` if the caller aborts first, ``unavailable`` if nobody answers."""
        print_ = fingerprint(request.tool_name, request.arguments)
        agent = request.agent if is_lossless_json(request.agent) else repr(request.agent)
        self._record(
            request,
            "approval/asked",
            {
                "call_id": request.call_id,
                "tool_name": request.tool_name,
                "reason": request.reason,
                "arguments": thaw(request.arguments),
                "agent": agent,
                "fingerprint": print_,
            },
        )
        outcome = await self._decide(request)
        decided: dict[str, Any] = {
            "call_id": request.call_id,
            "tool_name": request.tool_name,
            "outcome": outcome,
            "fingerprint": print_,
        }
        if outcome == "expired":
            decided["wait_timeout_ms"] = self._wait_timeout_ms
        self._record(request, "approval/decided", decided)
        return outcome

    async def _decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        if request.signal.aborted:
            return "cancelled"
        answer = asyncio.ensure_future(EventBus.waterfall(self._answerers, (request,), _unavailable))
        cancelled = asyncio.ensure_future(request.signal.wait())
        limit = self._wait_timeout_ms
        timeout = None if isinstance(limit, Unbounded) else limit / 1000
        try:
            done, _ = await asyncio.wait(
                {answer, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            answer.cancel()
            raise
        finally:
            cancelled.cancel()
        if answer not in done:
            answer.cancel()
            if not done and not isinstance(limit, Unbounded):
                # Nobody answered in time: not a yes, and not the caller's abort either.
                logger.warning(
                    'approval for tool "%s" (%s) expired: no answer within %sms',
                    request.tool_name,
                    request.call_id,
                    js_number(limit),
                )
                return "expired"
            return "cancelled"
        # A rogue answer is passed through: the pipeline turns it into a structured failure.
        return answer.result()

    def _record(self, request: ApprovalRequest, kind: str, data: Mapping[str, Any]) -> None:
        sink = self._sessions.get(request.agent, self._audit)
        if sink is not None:
            sink(kind, data)


async def _unavailable() -> ApprovalOutcome:
    return "unavailable"


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    """Answer ``outcome`` for tools matching ``tool`` (a name or ``fnmatch`` pattern) when ``when``
    (a predicate over the frozen arguments) holds or is absent."""

    tool: str
    outcome: ApprovalOutcome
    when: Callable[[Any], bool] | None = None

    def matches(self, request: ApprovalRequest) -> bool:
        if not fnmatch.fnmatchcase(request.tool_name, self.tool):
            return False
        if self.when is None:
            return True
        try:
            return self.when(request.arguments) is True
        except Exception:
            return False


def rule_answerer(rules: Sequence[ApprovalRule]) -> Answerer:
    """A programmatic answerer: the first matching rule decides; no match delegates to ``next``."""
    frozen_rules = tuple(rules)
    for rule in frozen_rules:
        if rule.outcome not in _OUTCOMES:
            raise ValueError(
                f"approval rule outcome must be one of {sorted(_OUTCOMES)}, got {rule.outcome!r}"
            )

    async def answer(
        request: ApprovalRequest, next: Callable[[], Awaitable[ApprovalOutcome]]
    ) -> ApprovalOutcome:
        for rule in frozen_rules:
            if rule.matches(request):
                return rule.outcome
        return await next()

    return answer


def terminal_answerer(
    *,
    runtime: ToolRuntime | None = None,
    input_stream: TextIO | None = None,
    output: TextIO | None = None,
) -> Answerer:
    """Ask a human at the terminal: show the call card and wait for ``y`` / ``n`` / ``a``.

    ``a`` allows this call and remembers its fingerprint, so later calls with exactly the same tool
    and arguments are allowed without asking; any other arguments ask again. End of input answers
    ``unavailable``. The prompt is abandoned (``cancelled``) when the caller aborts.
    """
    remembered: set[str] = set()
    reader = input_stream if input_stream is not None else sys.stdin
    writer = output if output is not None else sys.stderr

    async def answer(
        request: ApprovalRequest, next: Callable[[], Awaitable[ApprovalOutcome]]
    ) -> ApprovalOutcome:
        print_ = fingerprint(request.tool_name, request.arguments)
        if print_ in remembered:
            return "allowed-once"
        writer.write(
            describe_request(request, runtime)
            + "\nAllow this call? [y]es / [n]o / [a]lways for these exact arguments: "
        )
        writer.flush()
        line = await asyncio.to_thread(reader.readline)
        if line == "":
            return "unavailable"
        choice = line.strip().lower()
        if choice in ("a", "always"):
            remembered.add(print_)
            return "allowed-once"
        if choice in ("y", "yes"):
            return "allowed-once"
        return "rejected"

    return answer


def describe_request(request: ApprovalRequest, runtime: ToolRuntime | None = None) -> str:
    """A plain-text call card: the tool's own ``present_call`` card when it has one, else generic."""
    card: Any = None
    definition = runtime.get(request.tool_name, request.agent) if runtime is not None else None
    if definition is not None and definition.present_call is not None:
        try:
            card = definition.present_call(request.arguments)
        except Exception:
            card = None  # a presenter must never break the prompt
    lines = [f"── approval: {request.tool_name} (call {request.call_id}) ──"]
    if request.reason:
        lines.append(f"why: {request.reason}")
    if isinstance(card, Mapping):
        for key in ("title", "description", "cwd", "rawInput"):
            if key in card:
                lines.append(f"{key}: {card[key]}")
    lines.append("arguments: " + js_json_dumps(request.arguments))
    return "\n".join(lines)
