"""The vocabulary of the session log: the known event type names, the event records, the errors.

Everything else that handles a session log — the JSONL file (:mod:`toolrt.loop._session_log`), the data
schema (:mod:`toolrt.loop._event_schema`), the constructors (:mod:`toolrt.loop._event_constructors`),
the derived conversation (:mod:`toolrt.loop._derive`) and the replay (:mod:`toolrt.loop._replay`) —
speaks in these terms. They live apart so that all of those can share them while this module
imports none of them: it is the bottom of the session log's import graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from toolrt._errors import InvalidEventError, SessionLogError

__all__ = [
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "CODE_DISPATCH",
    "CODE_DISPATCH_START",
    "CONTEXT_ADDED",
    "MODEL_ASSISTANT",
    "MODEL_USER",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "Event",
    "InvalidEventError",
    "NewEvent",
    "SessionLogError",
]

MODEL_USER = "model/user"
MODEL_ASSISTANT = "model/assistant"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
CONTEXT_ADDED = "context/added"
APPROVAL_ASKED = "approval/asked"
APPROVAL_DECIDED = "approval/decided"
CODE_DISPATCH_START = "tool/code-dispatch-start"
CODE_DISPATCH = "tool/code-dispatch"
TURN_START = "turn/start"
TURN_END = "turn/end"


@dataclass(frozen=True, slots=True)
class Event:
    """One logged event. ``data`` is a frozen lossless-JSON snapshot (read it, never mutate it)."""

    seq: int
    type: str
    time: float
    data: Mapping[str, Any]


class NewEvent(NamedTuple):
    """An event to append, as the ``*_event`` constructors build it: ``log.append(*new_event)``."""

    type: str
    data: dict[str, Any]
