"""Replaying a session log for UIs: tool cards and a timeline of what happened.

A tool renders its own calls through ``present_call(args)`` and ``present_result(args, {content,
is_error, meta?})`` (see :mod:`toolrt.cards._views`). Presenters are pure, so a UI gets the same
cards live and when replaying a log written long ago — provided the tool is still registered.
Everything here degrades to the generic card instead of failing: an unknown tool, a tool without a
presenter, a presenter that returns ``None``, returns something that is not a JSON card, or raises
(a presenter bug must never make a session unreadable). ::

    result = SessionLog.read("session.jsonl")
    for item in replay(result.events, runtime):
        match item:
            case MessageItem(kind="user", message=message): ...
            case ToolItem(call_card=card, result_card=result_card): ...

Tools are looked up with ``runtime.get(name, agent)``, where ``agent`` is the value the loop logged
on ``tool/call`` (so log a JSON agent id that is also the scope key). ``run_code`` sub-calls
(``tool/code-dispatch-start`` / ``tool/code-dispatch``) without an agent of their own use their
parent call's agent.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypeAlias, cast

from toolrt._json import NotLosslessJsonError, snapshot_json
from toolrt._tool_definition import PresentedResult, ToolDefinition
from toolrt.cards._views import ToolCallView, ToolResultView
from toolrt.loop._messages import AssistantMessage, ToolCall, UserMessage
from toolrt.loop._session_events import (
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
)

__all__ = [
    "ApprovalItem",
    "MessageItem",
    "ReplayItem",
    "ToolItem",
    "ToolLookup",
    "TurnItem",
    "call_arguments",
    "render_call_card",
    "render_result_card",
    "replay",
]

_logger = logging.getLogger(__name__)

_CALL_TYPES = (TOOL_CALL, CODE_DISPATCH_START, CODE_DISPATCH)
_RESULT_TYPES = (TOOL_RESULT, CODE_DISPATCH)


class ToolLookup(Protocol):
    """Where replay finds tools: :class:`toolrt.ToolRuntime` (``get(name, scope)``) fits."""

    def get(self, name: str, scope: Hashable | None = None, /) -> ToolDefinition | None: ...


# --- cards ----------------------------------------------------------------------------------------


def call_arguments(event: Event) -> Any:
    """The arguments a call's presenters see.

    For ``tool/call``: the parsed arguments, or the raw text when it did not parse (what the
    pipeline received, so a validating presenter declines it). For a code dispatch: its arguments.
    """
    _expect(event, _CALL_TYPES, "render_call_card")
    data = event.data
    if event.type == TOOL_CALL:
        parsed = data.get("parsed_arguments")
        return data.get("arguments") if parsed is None else parsed
    return data.get("arguments")


def render_call_card(event: Event, runtime: ToolLookup | None = None) -> ToolCallView:
    """The card of a ``tool/call`` (or code-dispatch) event: the tool's ``present_call`` or generic."""
    _expect(event, _CALL_TYPES, "render_call_card")
    return _call_card(str(event.data.get("name")), call_arguments(event), event.data.get("agent"), runtime)


def render_result_card(
    call_event: Event | None, result_event: Event, runtime: ToolLookup | None = None
) -> ToolResultView:
    """The card of a ``tool/result`` (or ``tool/code-dispatch``) event, given its call event.

    ``call_event`` supplies the arguments and the agent; without it the generic card is used.
    """
    _expect(result_event, _RESULT_TYPES, "render_result_card")
    if call_event is None:
        name = str(result_event.data.get("name"))
        return {"card": "generic", "title": name, "content": result_event.data.get("content", ())}
    _expect(call_event, _CALL_TYPES, "render_result_card")
    agent = call_event.data.get("agent")
    return _result_card(result_event, call_arguments(call_event), agent, runtime)


def _expect(event: Event, types: tuple[str, ...], where: str) -> None:
    if event.type not in types:
        raise ValueError(f"{where} takes a {' / '.join(types)} event, not {event.type!r}")


def _lookup(runtime: ToolLookup | None, name: str, agent: Any) -> ToolDefinition | None:
    if runtime is None:
        return None
    try:
        return runtime.get(name, agent)
    except Exception as error:  # an unhashable logged agent, a closed runtime, ...
        _logger.warning("replay: looking up tool %r for agent %r failed: %r", name, agent, error)
        return None


def _call_card(name: str, args: Any, agent: Any, runtime: ToolLookup | None) -> ToolCallView:
    definition = _lookup(runtime, name, agent)
    present = None if definition is None else definition.present_call
    if present is not None:
        view = _presented(lambda: present(args), name, "present_call")
        if view is not None:
            return cast(ToolCallView, view)
    return {"card": "generic", "title": name, "rawInput": args}


def _result_card(result: Event, args: Any, agent: Any, runtime: ToolLookup | None) -> ToolResultView:
    data = result.data
    name = str(data.get("name"))
    content = data.get("content", ())
    definition = _lookup(runtime, name, agent)
    if definition is not None and definition.present_result is not None:
        presented: PresentedResult = {"content": content, "is_error": data.get("is_error") is True}
        if data.get("meta") is not None:
            presented["meta"] = data["meta"]
        present = definition.present_result
        view = _presented(lambda: present(args, presented), name, "present_result")
        if view is not None:
            return cast(ToolResultView, view)
    return {"card": "generic", "title": name, "content": content}


def _presented(present: Any, name: str, which: str) -> Any:
    """Run a presenter; its view as a frozen JSON card, or ``None`` to fall back to the generic one."""
    try:
        view = present()
    except Exception as error:
        _logger.warning("replay: %s of tool %r raised %r; showing the generic card", which, name, error)
        return None
    if view is None:
        return None
    if inspect.iscoroutine(view):
        view.close()
        _logger.warning("replay: %s of tool %r is async; presenters must be plain functions", which, name)
        return None
    if not isinstance(view, Mapping) or type(view.get("card")) is not str:
        _logger.warning("replay: %s of tool %r returned %r, not a card", which, name, type(view).__name__)
        return None
    try:
        return snapshot_json(view, "view")
    except NotLosslessJsonError as error:
        _logger.warning("replay: %s of tool %r returned a card that is not JSON: %s", which, name, error)
        return None


# --- the timeline ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageItem:
    """A conversation message: ``user`` (``model/user``), ``assistant``, or a ``context`` after a call."""

    kind: Literal["user", "assistant", "context"]
    event: Event
    message: UserMessage | AssistantMessage
    call_id: str | None = None
    """For a context: the call whose result it follows."""


@dataclass(frozen=True, slots=True)
class ToolItem:
    """One call and (once logged) its result, with their cards. Placed where the call was logged.

    ``kind="sub-call"`` is a ``run_code`` sub-call (``parent_call_id`` names the ``run_code`` call).
    ``call_event`` is ``None`` only for a result logged without its call.
    """

    kind: Literal["tool", "sub-call"]
    call_id: str
    name: str
    call_event: Event | None
    call_card: ToolCallView
    result_event: Event | None = None
    result_card: ToolResultView | None = None
    parent_call_id: str | None = None

    @property
    def is_error(self) -> bool | None:
        """Whether the result is an error; ``None`` while no result is logged."""
        return None if self.result_event is None else self.result_event.data.get("is_error") is True


@dataclass(frozen=True, slots=True)
class ApprovalItem:
    """An approval question and (once logged) its answer."""

    call_id: str
    tool_name: str
    reason: str | None
    arguments: Any
    asked_event: Event | None
    outcome: str | None = None
    decided_event: Event | None = None


@dataclass(frozen=True, slots=True)
class TurnItem:
    """A turn boundary; ``reason`` is the ``turn/end`` reason."""

    kind: Literal["turn-start", "turn-end"]
    event: Event
    reason: str | None = None


ReplayItem: TypeAlias = MessageItem | ToolItem | ApprovalItem | TurnItem


def replay(events: Iterable[Event], runtime: ToolLookup | None = None) -> list[ReplayItem]:
    """A UI timeline of the log, in log order, with every call's cards rendered.

    A call's item sits where its ``tool/call`` (or ``tool/code-dispatch-start``) was logged and
    carries its result once the result event is found, however results interleave. Events of
    unknown types are skipped. Unlike :func:`~toolrt.loop.derive_messages` this shows the
    log as it is: no synthetic results, no reordering.
    """
    items: list[ReplayItem] = []
    tools: dict[str, int] = {}
    subs: dict[str, int] = {}
    approvals: dict[str, int] = {}
    agents: dict[str, Any] = {}
    for event in events:
        kind = event.type
        data = event.data
        if kind == MODEL_USER:
            user = UserMessage(data.get("content", ()), data.get("id"), data.get("source"))
            items.append(MessageItem("user", event, user))
        elif kind == MODEL_ASSISTANT:
            calls = tuple(
                ToolCall(str(call.get("id")), str(call.get("name")), str(call.get("arguments")))
                for call in data.get("tool_calls", ())
            )
            assistant = AssistantMessage(
                str(data.get("text", "")), calls, data.get("reasoning"), data.get("stop_reason")
            )
            items.append(MessageItem("assistant", event, assistant))
        elif kind == CONTEXT_ADDED:
            context = UserMessage(data.get("content", ()), data.get("id"), data.get("source"))
            items.append(MessageItem("context", event, context, str(data.get("call_id"))))
        elif kind == TOOL_CALL:
            call_id = str(data.get("call_id"))
            agents[call_id] = data.get("agent")
            tools[call_id] = len(items)
            card = render_call_card(event, runtime)
            items.append(ToolItem("tool", call_id, str(data.get("name")), event, card))
        elif kind == TOOL_RESULT:
            call_id = str(data.get("call_id"))
            _settle(
                items,
                tools,
                event,
                runtime,
                call_id=call_id,
                kind="tool",
                parent=None,
                agent=agents.get(call_id),
            )
        elif kind == CODE_DISPATCH_START:
            sub_id = str(data.get("sub_call_id"))
            parent = str(data.get("parent_call_id"))
            agent = _sub_agent(data, agents, parent)
            subs[sub_id] = len(items)
            card = _call_card(str(data.get("name")), data.get("arguments"), agent, runtime)
            items.append(
                ToolItem("sub-call", sub_id, str(data.get("name")), event, card, parent_call_id=parent)
            )
        elif kind == CODE_DISPATCH:
            sub_id = str(data.get("sub_call_id"))
            parent = str(data.get("parent_call_id"))
            agent = _sub_agent(data, agents, parent)
            _settle(items, subs, event, runtime, call_id=sub_id, kind="sub-call", parent=parent, agent=agent)
        elif kind == APPROVAL_ASKED:
            call_id = str(data.get("call_id"))
            approvals[call_id] = len(items)
            items.append(
                ApprovalItem(
                    call_id, str(data.get("tool_name")), data.get("reason"), data.get("arguments"), event
                )
            )
        elif kind == APPROVAL_DECIDED:
            call_id = str(data.get("call_id"))
            outcome = data.get("outcome")
            index = approvals.get(call_id)
            if index is None:
                approvals[call_id] = len(items)
                items.append(
                    ApprovalItem(call_id, str(data.get("tool_name")), None, None, None, outcome, event)
                )
            else:
                items[index] = replace(cast(ApprovalItem, items[index]), outcome=outcome, decided_event=event)
        elif kind == TURN_START:
            items.append(TurnItem("turn-start", event))
        elif kind == TURN_END:
            items.append(TurnItem("turn-end", event, data.get("reason")))
    return items


def _sub_agent(data: Mapping[str, Any], agents: Mapping[str, Any], parent: str) -> Any:
    agent = data.get("agent")
    return agents.get(parent) if agent is None else agent


def _settle(
    items: list[ReplayItem],
    index_of: dict[str, int],
    event: Event,
    runtime: ToolLookup | None,
    *,
    call_id: str,
    kind: Literal["tool", "sub-call"],
    parent: str | None,
    agent: Any,
) -> None:
    index = index_of.get(call_id)
    if index is None:
        # A result without its call (a writer bug): show it on its own, with a generic card.
        name = str(event.data.get("name"))
        card = render_result_card(None, event, runtime)
        generic: ToolCallView = {"card": "generic", "title": name}
        index_of[call_id] = len(items)
        items.append(ToolItem(kind, call_id, name, None, generic, event, card, parent))
        return
    item = cast(ToolItem, items[index])
    assert item.call_event is not None
    card = _result_card(event, call_arguments(item.call_event), agent, runtime)
    items[index] = replace(item, result_event=event, result_card=card)
