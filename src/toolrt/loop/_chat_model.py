"""The model seam: anything that turns a :class:`ModelRequest` into an :class:`AssistantMessage`.

The agent loop only needs :class:`ChatModel`. toolrt ships an OpenAI-compatible implementation (the
official ``openai`` client with a configurable ``base_url``, so OpenAI, DeepSeek, vLLM and Ollama all
work) and a scripted one for tests and the demo.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from toolrt._abort import AbortSignal
from toolrt._errors import TOOL_ABORTED, AbortError
from toolrt.loop._messages import AssistantMessage, ModelRequest, Usage

__all__ = ["ChatModel", "ModelResponse", "TextDelta", "model_call_aborted", "raise_if_aborted"]

TextDelta = Callable[[str], None]
"""Called with each streamed text fragment as it arrives (for live UIs)."""


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One completed model call."""

    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)


class ChatModel(Protocol):
    """A model the agent loop can drive.

    ``complete`` must stop promptly when ``signal`` fires, raising ``toolrt.AbortError`` (code
    ``ABORTED``), and must return only after its request has ended (no dangling stream).
    """

    async def complete(
        self, request: ModelRequest, *, signal: AbortSignal, on_text: TextDelta | None = None
    ) -> ModelResponse: ...


def model_call_aborted() -> AbortError:
    """The error a model raises when its call is aborted: ``AbortError("model call aborted", "ABORTED")``."""
    return AbortError("model call aborted", TOOL_ABORTED)


def raise_if_aborted(signal: AbortSignal) -> None:
    """Raise :func:`model_call_aborted` if ``signal`` has fired.

    A function (not an inline ``if signal.aborted``) so type checkers do not narrow ``aborted`` to
    False for the rest of the call: another thread can fire the signal at any time.
    """
    if signal.aborted:
        raise model_call_aborted()
