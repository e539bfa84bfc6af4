"""Provider wire formats for the agent loop's neutral conversation.

Pure functions, typed with the official packages' TypedDicts and models; neither ``openai`` nor
``anthropic`` is imported at runtime by these modules.

* OpenAI Chat Completions (and compatible servers): :func:`to_openai_tools`,
  :func:`to_openai_messages`, :func:`from_openai_message`.
* Anthropic Messages: :func:`to_anthropic_tools`, :func:`to_anthropic_messages`,
  :func:`from_anthropic_message`.

Both refuse a conversation the provider would reject — a tool call without a result, a result
without a call — with :class:`ConversationError`, and both send results in the model's call order.
"""

from __future__ import annotations

from ._turns import ConversationError
from .anthropic_messages import (
    RAW_ARGUMENTS_KEY,
    from_anthropic_message,
    to_anthropic_messages,
    to_anthropic_tools,
)
from .openai_chat import from_openai_message, reasoning_of, to_openai_messages, to_openai_tools

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "ConversationError",
    "from_anthropic_message",
    "from_openai_message",
    "reasoning_of",
    "to_anthropic_messages",
    "to_anthropic_tools",
    "to_openai_messages",
    "to_openai_tools",
]
