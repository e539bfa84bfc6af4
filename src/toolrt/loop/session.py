"""The durable session log: an append-only JSONL file of events, and the conversation derived from it.

The log is the source of truth of a session: everything the model sees can be rebuilt from it
(:func:`derive_messages`), and UIs replay it (:mod:`toolrt.loop.replay`). ::

    with SessionLog.open("session.jsonl", durability="batch") as log:
        log.append(*model_user_event("list the TODOs"))
        log.append(*tool_call_event("c1", "grep", '{"pattern": "TODO"}', {"pattern": "TODO"}))
        messages = log.messages()

This module is the one place to import the session log from: it re-exports, unchanged, the public
names of the modules that implement it, one concept each. Each of them imports only from those
listed before it, and none imports this module:

* :mod:`toolrt.loop.event_records` — the known event type names (``MODEL_USER``, ``TOOL_CALL``, ...),
  :class:`Event`, :class:`NewEvent`, :class:`SessionLogError` and :class:`InvalidEventError`.
* :mod:`toolrt.loop.event_schema` — what the ``data`` of each known event type holds (the reference
  list of known types, and :data:`TurnEndReason`), checked on append and on derive.
* :mod:`toolrt.loop.event_constructors` — the ``*_event`` constructors.
* :mod:`toolrt.loop.derive` — :func:`derive_messages` and :data:`INCOMPLETE_CALL_TEXT`.
* :mod:`toolrt.loop.jsonl_log` — :class:`SessionLog`: durability and the one-writer lock, the on-disk
  format, crash recovery (:class:`TornLine`, :class:`ReadResult`, :class:`SessionLogCorruptError`).
"""

from __future__ import annotations

from .derive import INCOMPLETE_CALL_TEXT, derive_messages
from .event_constructors import (
    approval_asked_event,
    approval_decided_event,
    code_dispatch_event,
    code_dispatch_start_event,
    context_added_event,
    model_assistant_event,
    model_user_event,
    tool_call_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)
from .event_records import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    CODE_DISPATCH,
    CODE_DISPATCH_START,
    CONTEXT_ADDED,
    MODEL_ASSISTANT,
    MODEL_USER,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Event,
    InvalidEventError,
    NewEvent,
    SessionLogError,
)
from .event_schema import TurnEndReason
from .jsonl_log import Durability, ReadResult, SessionLog, SessionLogCorruptError, TornLine

__all__ = [
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "CODE_DISPATCH",
    "CODE_DISPATCH_START",
    "CONTEXT_ADDED",
    "INCOMPLETE_CALL_TEXT",
    "MODEL_ASSISTANT",
    "MODEL_USER",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "Durability",
    "Event",
    "InvalidEventError",
    "NewEvent",
    "ReadResult",
    "SessionLog",
    "SessionLogCorruptError",
    "SessionLogError",
    "TornLine",
    "TurnEndReason",
    "approval_asked_event",
    "approval_decided_event",
    "code_dispatch_event",
    "code_dispatch_start_event",
    "context_added_event",
    "derive_messages",
    "model_assistant_event",
    "model_user_event",
    "tool_call_event",
    "tool_result_event",
    "turn_end_event",
    "turn_start_event",
]
