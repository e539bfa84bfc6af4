"""The agent loop: model → tool calls → results, until the model stops.

::

    agent = Agent(runtime, OpenAIChatModel("gpt-4.1-mini"), instructions="You are a careful assistant.",
                  session=SessionLog.create("session.jsonl"))
    result = await agent.run_turn("How many TODOs are in src/?")
    print(result.text)

One turn: log the user message; then, up to ``max_steps`` times, assemble the system prompt and
tool schemas for the agent's scope, call the model, log its message, and run its tool calls through
the scheduler (which logs ``tool/call`` before each call's policy and ``tool/result`` after each
commit, in model order). The turn ends when the model answers without calls (``stop``), a result
concludes it (``concluded``), the step budget runs out (``step-budget``), or the turn's signal fires
(``aborted``). Every outcome is written as ``turn/end``.

Cancellation from outside, at any point, leaves no call without its result: an abort during the
model call discards the unfinished message (nothing was logged for it); an abort during tool calls
drains started calls and gives every unstarted one an ``ABORTED_BEFORE_DISPATCH`` result; cancelling
the task that awaits the turn does the same before ``CancelledError`` propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt._content import ContentBlock
from toolrt._errors import AbortError
from toolrt._events import Disposer
from toolrt._json import is_lossless_json, thaw
from toolrt.loop._chat_model import ChatModel, ModelResponse, TextDelta
from toolrt.loop._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    encodable_assistant_message,
)
from toolrt.loop._scheduler import CommittedCall, run_tool_calls
from toolrt.loop._session_events import (
    Event,
    TurnEndReason,
    context_added_event,
    model_assistant_event,
    model_user_event,
    tool_call_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)
from toolrt.loop._session_log import SessionLog

if TYPE_CHECKING:
    from toolrt._prompt.system_prompt import SystemPrompt
    from toolrt._tool_runtime import Scope, ToolRuntime

__all__ = ["Agent", "TurnResult"]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended: ``reason``, the model's last text, how many model steps it took."""

    reason: TurnEndReason
    text: str
    steps: int
    messages: tuple[Message, ...]


class Agent:
    """One agent: a scope on the runtime, a model, a system prompt, and a session log.

    ``key`` identifies the agent: tools, restrictions and listeners registered on ``agent.scope``
    apply to it alone (and to agents parented to it). ``instructions`` become the first prompt
    section; pass ``prompt`` for full control of assembly. ``session`` defaults to an in-memory log;
    an existing log resumes its conversation.
    """

    def __init__(
        self,
        runtime: ToolRuntime,
        model: ChatModel,
        *,
        key: Hashable = "agent",
        parent: Hashable | None = None,
        instructions: str | None = None,
        prompt: SystemPrompt | None = None,
        session: SessionLog | None = None,
        max_steps: int = 25,
        max_parallel_tool_calls: int = 10,
    ) -> None:
        from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain

        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError("max_steps must be a positive integer")
        if not isinstance(max_parallel_tool_calls, int) or max_parallel_tool_calls < 1:
            raise ValueError("max_parallel_tool_calls must be a positive integer")
        self.runtime = runtime
        self.model = model
        self.scope: Scope = runtime.scope(key, parent=parent)
        self.key = self.scope.key
        self.session = session if session is not None else SessionLog.in_memory()
        self.max_steps = max_steps
        self.max_parallel_tool_calls = max_parallel_tool_calls
        self._disposers: list[Disposer] = []
        self._turn_end: list[Callable[[], None]] = []
        if prompt is None:
            prompt = SystemPrompt(chain=runtime_chain(runtime))
            self._disposers.append(connect_runtime(prompt, runtime))
        self.prompt = prompt
        if instructions is not None:
            self._disposers.append(prompt.section("instructions", 0, instructions, scope=self.key))
        self._log_key = self.key if is_lossless_json(self.key) else repr(self.key)
        self.messages: list[Message] = self.session.messages()
        self._turns = sum(1 for event in self.session.events() if event.type == "turn/start")
        # Durable events about this agent's calls (Code Mode sub-calls, approvals) go to its log.
        self._disposers.append(runtime.bind_session(self.key, self._log))
        bind = getattr(runtime.approval, "bind_session", None)
        if callable(bind):
            self._disposers.append(bind(self.key, self._log))

    def _log(self, type_: str, data: Any) -> Event:
        return self.session.append(type_, data)

    def on_turn_end(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` when each turn ends, however it ends (tool search unloads the tools a
        turn loaded here); returns a disposer that removes it."""
        self._turn_end.append(callback)

        def dispose() -> None:
            if callback in self._turn_end:
                self._turn_end.remove(callback)

        return dispose

    async def run_turn(
        self,
        user: str | Sequence[ContentBlock],
        *,
        signal: AbortSignal | None = None,
        on_text: TextDelta | None = None,
    ) -> TurnResult:
        """Run one user turn to its end (see the module docstring).

        With a tracer on the runtime (:func:`toolrt.otel.instrument`) the turn is an
        ``invoke_agent`` span, current while it runs: its model steps and tool calls nest under it.
        """
        observer = self.runtime.stages.observer
        if observer is None:
            return await self._run_turn(user, signal=signal, on_text=on_text)
        span = observer.start_span(
            "invoke_agent", str(self._log_key), {"gen_ai.agent.name": str(self._log_key)}
        )
        token = span.enter()
        try:
            result = await self._run_turn(user, signal=signal, on_text=on_text)
        except BaseException as error:
            span.exit(token)
            span.end(error)
            raise
        span.exit(token)
        span.set({"toolrt.turn.end_reason": result.reason, "toolrt.turn.steps": result.steps})
        span.end()
        return result

    async def _complete(
        self, request: ModelRequest, signal: AbortSignal, on_text: TextDelta | None
    ) -> ModelResponse:
        """One model step; a ``chat`` span when the runtime is traced (its usage as attributes)."""
        observer = self.runtime.stages.observer
        if observer is None:
            return await self.model.complete(request, signal=signal, on_text=on_text)
        model = getattr(self.model, "model", None)
        name = model if isinstance(model, str) else type(self.model).__name__
        span = observer.start_span("chat", name, {"gen_ai.request.model": name})
        try:
            response = await self.model.complete(request, signal=signal, on_text=on_text)
        except BaseException as error:
            span.end(error)
            raise
        usage = response.usage
        span.set(
            {
                key: value
                for key, value in (
                    ("gen_ai.usage.input_tokens", usage.input_tokens),
                    ("gen_ai.usage.output_tokens", usage.output_tokens),
                )
                if value is not None
            }
        )
        span.end()
        return response

    async def _run_turn(
        self, user: str | Sequence[ContentBlock], *, signal: AbortSignal | None, on_text: TextDelta | None
    ) -> TurnResult:
        signal = signal if signal is not None else AbortSignal()
        turn = self._turns
        self._turns += 1
        self._log(*turn_start_event(turn, agent=self._log_key))
        self._log(*model_user_event(user))
        content = [{"type": "text", "text": user}] if isinstance(user, str) else list(user)
        self.messages.append(UserMessage(content=content))
        steps = 0
        last_text = ""
        try:
            while steps < self.max_steps:
                if signal.aborted:
                    return self._end("aborted", turn, last_text, steps)
                assembly = await self.prompt.assemble(self.key, signal=signal)
                request = ModelRequest(
                    system=assembly.render(), messages=tuple(self.messages), tools=tuple(assembly.tools)
                )
                try:
                    response = await self._complete(request, signal, on_text)
                except AbortError:
                    return self._end("aborted", turn, last_text, steps)
                steps += 1
                message = encodable_assistant_message(response.message)
                self._log(*model_assistant_event(message, response.usage))
                self.messages.append(message)
                last_text = message.text
                if not message.tool_calls:
                    return self._end("stop", turn, last_text, steps)
                committed = await self._run_calls(message, signal)
                if any(not item.result.is_error and item.result.concludes_turn for item in committed):
                    return self._end("concluded", turn, last_text, steps)
            return self._end("step-budget", turn, last_text, steps)
        except asyncio.CancelledError:
            self._log(*turn_end_event("aborted", turn=turn))
            raise
        except BaseException as error:
            self._log(*turn_end_event("error", turn=turn, error=str(error) or type(error).__name__))
            raise
        finally:
            for callback in list(self._turn_end):
                callback()

    async def _run_calls(self, message: AssistantMessage, signal: AbortSignal) -> list[CommittedCall]:
        contexts: list[UserMessage] = []

        def on_call(call: ToolCall, arguments: Any) -> None:
            parsed = thaw(arguments) if is_lossless_json(arguments) else None
            self._log(*tool_call_event(call.id, call.name, call.arguments, parsed, agent=self._log_key))

        def on_result(committed: CommittedCall) -> None:
            call, result = committed.call, committed.result
            self._log(*tool_result_event(call.id, call.name, result))
            self.messages.append(
                ToolResultMessage(
                    call_id=call.id, name=call.name, content=result.content, is_error=result.is_error
                )
            )
            for context in result.additional_contexts:
                self._log(*context_added_event(call.id, context))
                contexts.append(
                    UserMessage(
                        content=context["content"], id=context.get("id"), source=context.get("source")
                    )
                )

        try:
            return await run_tool_calls(
                self.runtime,
                message.tool_calls,
                signal=signal,
                agent=self.key,
                max_parallel=self.max_parallel_tool_calls,
                on_call=on_call,
                on_result=on_result,
            )
        finally:
            # Contexts follow the whole batch of results: providers need results contiguous.
            self.messages.extend(contexts)

    def _end(self, reason: TurnEndReason, turn: int, text: str, steps: int) -> TurnResult:
        self._log(*turn_end_event(reason, turn=turn))
        return TurnResult(reason=reason, text=text, steps=steps, messages=tuple(self.messages))

    def close(self) -> None:
        """Close the agent's scope (undoing its registrations) and its prompt wiring."""
        for dispose in reversed(self._disposers):
            dispose()
        self._disposers.clear()
        self.scope.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
