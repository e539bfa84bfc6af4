"""A :class:`~toolrt.loop.ChatModel` that replays a script: :class:`ScriptedModel`, for tests and the demo.

It honours the call's :class:`~toolrt.AbortSignal` as every model must: an already-aborted signal
raises ``AbortError("model call aborted", "ABORTED")`` before the request is recorded, and an abort
during a step's delay raises the same error promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from toolrt._abort import AbortSignal
from toolrt._errors import ScriptExhaustedError
from toolrt.loop._chat_model import ModelResponse, TextDelta, raise_if_aborted
from toolrt.loop._messages import AssistantMessage, ModelRequest, Usage

__all__ = ["Reply", "ScriptStep", "ScriptedModel"]


Reply: TypeAlias = (
    AssistantMessage | str | Callable[[ModelRequest], "AssistantMessage | Awaitable[AssistantMessage]"]
)
"""A scripted reply: a message, plain text, or a function of the request (sync or async)."""


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """A scripted reply with options: ``delay`` seconds before answering, ``usage`` to report."""

    reply: Reply
    delay: float = 0.0
    usage: Usage = field(default_factory=Usage)


class ScriptedModel:
    """A :class:`~toolrt.loop._chat_model.ChatModel` that replays a script, for tests and the demo.

    Each step is an :class:`AssistantMessage`, a string (a text-only reply), a callable
    ``(ModelRequest) -> AssistantMessage`` (may be async), or a :class:`ScriptStep` adding a delay
    and usage. Every request that reaches the model is recorded in :attr:`requests` (messages and
    tools copied, so later appends by the caller do not rewrite history). A pre-aborted signal
    raises before recording; an abort during a step's delay raises promptly; running out of steps
    raises :class:`ScriptExhaustedError` naming the request it could not answer.
    """

    def __init__(self, steps: Iterable[Reply | ScriptStep], *, delay: float = 0.0) -> None:
        self.steps: list[ScriptStep] = [
            step if isinstance(step, ScriptStep) else ScriptStep(step, delay) for step in steps
        ]
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        """Steps not yet replayed."""
        return max(0, len(self.steps) - len(self.requests))

    async def complete(
        self, request: ModelRequest, *, signal: AbortSignal, on_text: TextDelta | None = None
    ) -> ModelResponse:
        """Replay the next step; see :class:`~toolrt.loop._chat_model.ChatModel`."""
        raise_if_aborted(signal)
        position = len(self.requests)
        self.requests.append(replace(request, messages=tuple(request.messages), tools=tuple(request.tools)))
        if position >= len(self.steps):
            last = request.messages[-1] if request.messages else None
            raise ScriptExhaustedError(
                f"ScriptedModel has {len(self.steps)} step(s) but was asked for reply #{position + 1}"
                f" (last message: {last!r})"
            )
        step = self.steps[position]
        if step.delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signal.wait(), step.delay)
            raise_if_aborted(signal)
        reply = step.reply
        if isinstance(reply, str):
            message = AssistantMessage(text=reply, stop_reason="stop")
        elif isinstance(reply, AssistantMessage):
            message = reply
        else:
            produced = reply(request)
            message = await produced if inspect.isawaitable(produced) else produced
            if not isinstance(message, AssistantMessage):
                raise TypeError(f"script step #{position + 1} returned {message!r}, not an AssistantMessage")
        raise_if_aborted(signal)
        if on_text is not None and message.text:
            on_text(message.text)
        return ModelResponse(message, step.usage)
