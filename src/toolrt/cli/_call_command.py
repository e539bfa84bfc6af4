"""``toolrt call NAME JSON``: one call through the whole pipeline, drawn as the model's UI would draw it.

The call card, what the policy decided (allowed, denied, or asked and answered), and the result card:
the tool's own cards, rendered through the same :func:`toolrt.loop.render_call_card` /
:func:`~toolrt.loop.render_result_card` a replayed log uses, so ``call`` shows what a session
shows. A tool failure exits 1; arguments that are not a JSON object, or a tool that is not
configured, are command-line mistakes (one line, exit 2).

Approvals (``[policies] ask``) are asked in the terminal; ``--yes`` answers them "allow once".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from dataclasses import replace
from typing import Any

from toolrt._abort import AbortController
from toolrt._decisions import Ask, Deny, PreToolDecision
from toolrt._errors import MAX_ECHO_CHARS, clip_text
from toolrt._execution import ToolExecution, ToolExecutionInput
from toolrt.cli._config import CliConfig, open_runtime
from toolrt.cli._render import CardRenderer, LiveRunLine

__all__ = ["CallArgumentsError", "add_call_parser", "call_command", "parse_call_arguments"]


AGENT = "toolrt-call"
"""The agent key of the command's call (approvals are asked per agent)."""


class CallArgumentsError(Exception):
    """The JSON argument of ``toolrt call`` is unusable; the message is the command's one line."""


def add_call_parser(commands: Any) -> None:
    """The ``call`` command on the CLI's subparsers."""
    call = commands.add_parser("call", help="run one tool call through the pipeline and show its cards")
    call.add_argument("name", help="the tool's name (see toolrt tools)")
    call.add_argument("arguments", help='the arguments, a JSON object, e.g. \'{"path": "README.md"}\'')
    call.add_argument("--yes", action="store_true", help="answer approval prompts 'allow once'")


def parse_call_arguments(text: str) -> dict[str, Any]:
    """The arguments as a dict; :class:`CallArgumentsError` for malformed JSON or a non-object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CallArgumentsError(
            f"the arguments are not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}): "
            f"{clip_text(repr(text), MAX_ECHO_CHARS)}"
        ) from None
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(value), "a number"
        )
        raise CallArgumentsError(f'the arguments must be a JSON object, e.g. \'{{"path": "."}}\', got {kind}')
    return value


def _event(seq: int, new: Any) -> Any:
    from toolrt.loop._session_events import Event

    return Event(seq, new.type, time.time(), new.data)


async def call_command(arguments: argparse.Namespace, config: CliConfig, console: Any) -> int:
    """Run the call and print its cards; 0, 1 when the tool failed, 2 for a command-line mistake."""
    from toolrt.loop._replay import render_call_card, render_result_card
    from toolrt.loop._session_events import tool_call_event, tool_result_event
    from toolrt.policies import terminal_answerer

    try:
        call_arguments = parse_call_arguments(arguments.arguments)
    except CallArgumentsError as error:
        print(f"toolrt call: error: {error}", file=sys.stderr)
        return 2
    answered: list[str] = []

    asker: list[Any] = []  # the terminal answerer, made once the runtime exists (it draws the call card)

    async def approve(request: Any, next: Any) -> Any:
        outcome = "allowed-once" if arguments.yes else await asker[0](request, next)
        answered.append(outcome)
        return outcome

    # Code Mode hides the tools behind run_code; a direct call needs them visible, so "code" becomes "both".
    mode = "both" if config.mode == "code" else config.mode
    async with open_runtime(replace(config, mode=mode), approvals=approve) as runtime:
        asker.append(terminal_answerer(runtime=runtime))
        if runtime.get(arguments.name) is None:
            known = ", ".join(schema["name"] for schema in runtime.schemas()) or "none"
            print(
                f"toolrt call: error: no tool named {clip_text(repr(arguments.name), MAX_ECHO_CHARS)} "
                f"is configured (tools: {known}; see toolrt tools)",
                file=sys.stderr,
            )
            return 2
        decisions: list[PreToolDecision] = []

        async def record(execution: ToolExecution, next: Any) -> PreToolDecision:
            decision: PreToolDecision = await next()
            if execution.parent is None:
                decisions.append(decision)
            return decision

        runtime.on("tools/pre-execute", record, prepend=True)
        renderer = CardRenderer(console)
        raw = json.dumps(call_arguments, ensure_ascii=False)
        call_event = _event(
            1, tool_call_event("cli-call-1", arguments.name, raw, call_arguments, agent=AGENT)
        )
        renderer.call(arguments.name, render_call_card(call_event, runtime))
        controller = AbortController()
        execution = ToolExecutionInput(
            call_id="cli-call-1",
            name=arguments.name,
            arguments=call_arguments,
            signal=controller.signal,
            # Approvals are routed per agent: the command is one.
            agent=AGENT,
        )
        # Ctrl-C aborts the call through its signal (the tool's cancellation path, e.g. a killed
        # process group), and the cancelled result is drawn like any other.
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, controller.abort, "interrupted (Ctrl-C)")
        try:
            if arguments.name == "run_code":
                with LiveRunLine(console, runtime) as live:
                    result = await runtime.execute(execution)
                console.print(live.summary(), style="dim")
            else:
                result = await runtime.execute(execution)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        text, ok = _describe(decisions, answered)
        renderer.decision(text, ok=ok)
        result_event = _event(2, tool_result_event("cli-call-1", arguments.name, result))
        renderer.result(
            arguments.name, render_result_card(call_event, result_event, runtime), is_error=result.is_error
        )
    return 1 if result.is_error else 0


def _describe(decisions: list[PreToolDecision], answered: list[str]) -> tuple[str, bool]:
    if not decisions:
        return "not consulted (the call failed before the policy stage)", False
    decision = decisions[0]
    if isinstance(decision, Deny):
        return f"deny — {decision.reason}", False
    if isinstance(decision, Ask):
        outcome = answered[0] if answered else "no answer"
        why = f" ({decision.reason})" if decision.reason else ""
        return f"ask{why} → {outcome}", outcome.startswith("allowed")
    return "allow", True
