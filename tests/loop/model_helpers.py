"""What the tests of the SDK-backed chat models share: a hang guard, two tool schemas, a request.

Both model test files drive the same :class:`~toolrt.loop.ChatModel` contract against their fake
server, so they build their requests the same way.

Not a test module: import it (``from model_helpers import ADD_SCHEMA, model_request``).
"""

from __future__ import annotations

from typing import Any

from helpers import text
from toolrt.loop._messages import Message, ModelRequest, UserMessage

__all__ = ["ADD_SCHEMA", "HANG_GUARD", "MUL_SCHEMA", "model_request"]

HANG_GUARD = 10.0
"""Upper bound for awaiting anything here, so a regression fails instead of hanging the suite."""

ADD_SCHEMA = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
}
MUL_SCHEMA = {**ADD_SCHEMA, "name": "mul", "description": "Multiply two integers."}


def model_request(*messages: Message, tools: tuple[Any, ...] = (ADD_SCHEMA,)) -> ModelRequest:
    """A request with a fixed system prompt; no messages means one user ``hi``."""
    return ModelRequest(
        system="You are a test.", messages=messages or (UserMessage(text("hi")),), tools=tools
    )
