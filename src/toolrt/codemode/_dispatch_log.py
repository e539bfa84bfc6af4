"""The durable record of a ``run_code`` program's binding calls: two log-only session events.

With an agent whose session is bound (``ToolRuntime.bind_session``), each started sub-call logs
``tool/code-dispatch-start`` and, once committed, one ``tool/code-dispatch`` whose content has passed
the ``tools/code-dispatch-log`` waterfall (the spill hook: a listener may log a preview instead of
the whole content). Code Mode makes these events itself and hands them to the bound sink as
``sink(type, data)``: the core and Code Mode know nothing of the agent loop, which only stores and
replays them (they never derive a model message).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from toolrt._content import ContentBlock
from toolrt._execution import ToolRunContext
from toolrt._json import is_lossless_json

__all__ = [
    "CODE_DISPATCH",
    "CODE_DISPATCH_START",
    "CodeDispatchLogEntry",
    "code_dispatch_event",
    "code_dispatch_start_event",
    "json_agent_key",
]

CODE_DISPATCH_START = "tool/code-dispatch-start"
"""A ``run_code`` sub-call started (log-only)."""
CODE_DISPATCH = "tool/code-dispatch"
"""A ``run_code`` sub-call settled (log-only)."""


@dataclass(frozen=True, slots=True)
class CodeDispatchLogEntry:
    """What a ``tools/code-dispatch-log`` listener sees: ``listener(entry, next)``; ``next()`` returns
    the settled content, and the listener returns the content to log (e.g. a spill preview)."""

    execution: ToolRunContext
    agent: Hashable | None
    sub_call_id: str
    name: str
    is_error: bool
    content: Any


def code_dispatch_start_event(
    *, root_call_id: str, parent_call_id: str, sub_call_id: str, name: str, arguments: Any, agent: Any = None
) -> tuple[str, dict[str, Any]]:
    """``tool/code-dispatch-start``: a ``run_code`` sub-call started, as ``(type, data)``."""
    return (
        CODE_DISPATCH_START,
        {
            "root_call_id": root_call_id,
            "parent_call_id": parent_call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
            "agent": agent,
        },
    )


def code_dispatch_event(
    *,
    root_call_id: str,
    parent_call_id: str,
    sub_call_id: str,
    name: str,
    arguments: Any,
    is_error: bool,
    content: Sequence[ContentBlock],
    agent: Any = None,
) -> tuple[str, dict[str, Any]]:
    """``tool/code-dispatch``: a ``run_code`` sub-call settled, as ``(type, data)``."""
    return (
        CODE_DISPATCH,
        {
            "root_call_id": root_call_id,
            "parent_call_id": parent_call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
            "is_error": is_error,
            "content": content,
            "agent": agent,
        },
    )


def json_agent_key(agent: Hashable | None) -> Any:
    """The agent as the events record it: the key itself when it is JSON, else its ``repr``."""
    return agent if agent is None or is_lossless_json(agent) else repr(agent)
