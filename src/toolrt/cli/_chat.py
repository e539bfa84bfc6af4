"""``toolrt chat``: an interactive agent loop in the terminal, against your own model.

The configured tools (``toolrt.toml``: built-ins, MCP servers, mode, policies, budgets) on one
:class:`~toolrt.loop.Agent`, talking to an OpenAI-compatible endpoint
(:class:`~toolrt.loop.OpenAIChatModel`) or Anthropic (:class:`~toolrt.loop.AnthropicModel`). The
model's text streams as it arrives; every call and result is drawn as the tool's own card; a call
the policies ask about shows its card and waits for ``y`` / ``n`` / ``a`` (always, for exactly
these arguments).

Why Ctrl-C is handled by hand: the one key people press to stop a runaway answer must stop *that
answer*, not throw away the session. During a turn, Ctrl-C aborts the turn's signal (the stream is
closed, running tools are cancelled, every call still gets its result in the log) and the prompt
comes back; a second Ctrl-C before the turn has wound down cancels it outright. At the prompt,
Ctrl-C twice in a row, or Ctrl-D, ends the session.

Lines are read from the terminal on the event loop (not with ``input()`` in a thread), so an
interrupted prompt leaves no thread blocked on a read that would swallow the next line.

``--session FILE`` logs the session (a new file); ``--resume FILE`` continues one: the earlier
conversation is shown and sent to the model with the next turn.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from toolrt._abort import AbortController, AbortSignal
from toolrt._json import thaw

__all__ = ["add_chat_parser", "chat_command"]

USAGE_ERROR = 2
AGENT = "toolrt-chat"
"""The agent key of the chat's calls (replay looks tools up by it)."""

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant working in the user's workspace through the tools you are given. "
    "Be concise. Use a tool when it answers the question better than a guess."
)
_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_PROMPT = "you> "


def add_chat_parser(commands: Any) -> None:
    """The ``chat`` command on the CLI's subparsers."""
    chat = commands.add_parser(
        "chat", help="an interactive agent loop against your model (OpenAI or Anthropic)"
    )
    chat.add_argument(
        "--provider", choices=("openai", "anthropic"), default=None, help="default: [model] or openai"
    )
    chat.add_argument("--model", default=None, help="the model name (default: [model] model)")
    chat.add_argument(
        "--base-url", default=None, help="the endpoint (default: [model] base_url or the provider's)"
    )
    where = chat.add_mutually_exclusive_group()
    where.add_argument("--session", default=None, metavar="FILE", help="log the session to a new FILE")
    where.add_argument("--resume", default=None, metavar="FILE", help="continue the session logged in FILE")
    chat.add_argument(
        "--instructions", default=None, help="the system instructions (default: a short helper)"
    )
    chat.add_argument("--max-steps", type=_positive, default=25, help="model steps per turn (default 25)")
    chat.add_argument("--yes", action="store_true", help="answer every approval 'allow once' (unsafe)")
    chat.add_argument("--config", default=argparse.SUPPRESS, help="the toolrt.toml to use")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


class _UsageError(Exception):
    """A command-line mistake: one line on stderr, exit 2."""


def chat_command(arguments: argparse.Namespace) -> int:
    """Run ``toolrt chat``; 0 at the end of the session, 2 for a mistake (one line on stderr)."""
    from toolrt.cli._config import ConfigError, load_config

    try:
        config_path = getattr(arguments, "config", None)
        config = load_config(None if config_path is None else Path(config_path), cwd=Path.cwd())
        model = _build_model(arguments, config)
    except (ConfigError, _UsageError) as error:
        print(f"toolrt chat: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    try:
        return asyncio.run(_chat(arguments, config, model))
    except (ConfigError, _UsageError) as error:  # the session file, or a check only open_runtime makes
        print(f"toolrt chat: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130


def _build_model(arguments: argparse.Namespace, config: Any) -> Any:
    """The model the flags and ``[model]`` name; a missing model name or key is a :class:`_UsageError`."""
    configured = config.model
    provider = arguments.provider or (configured.provider if configured is not None else "openai")
    same = configured is not None and configured.provider == provider
    name = arguments.model or (configured.model if same else None)
    if not name:
        raise _UsageError(
            "no model named: pass --model NAME or set model in the [model] table of toolrt.toml"
        )
    base_url = arguments.base_url or (configured.base_url if same else None)
    # A key env of the config's provider is not the other provider's key.
    key_env = configured.api_key_env if same else _KEY_ENV[provider]
    key = os.environ.get(key_env)
    if not key:
        hint = " (a local server takes any value)" if base_url else ""
        raise _UsageError(f"no API key: set {key_env} in the environment{hint}")
    try:
        if provider == "anthropic":
            from toolrt.loop._anthropic_model import AnthropicModel

            return AnthropicModel(name, base_url=base_url, api_key=key)
        from toolrt.loop._openai_model import OpenAIChatModel

        return OpenAIChatModel(name, base_url=base_url, api_key=key)
    except ImportError as error:
        extra = "anthropic" if provider == "anthropic" else "openai"
        raise _UsageError(
            f"the {provider} client is not installed: pip install 'toolrt[{extra}]' ({error})"
        ) from None


def _open_session(arguments: argparse.Namespace) -> Any:
    from toolrt._errors import SessionLogError
    from toolrt.loop._session_log import SessionLog

    try:
        if arguments.resume is not None:
            return SessionLog.resume(arguments.resume)
        if arguments.session is not None:
            return SessionLog.create(arguments.session)
    except (SessionLogError, OSError) as error:
        raise _UsageError(str(error)) from None
    return SessionLog.in_memory()


_INTERRUPTED = object()
_ABORTED = object()


class _Lines:
    """Lines from the terminal, read on the event loop (see the module docstring).

    ``readline`` returns the line, ``None`` at end of input, :data:`_INTERRUPTED` when Ctrl-C was
    pressed while waiting, or :data:`_ABORTED` when its ``signal`` fired.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.buffer = b""
        self.eof = False
        self.waiter: asyncio.Future[object] | None = None
        self.loop = asyncio.get_running_loop()
        self.fd: int | None = None
        with contextlib.suppress(AttributeError, OSError, ValueError, PermissionError):
            fd = stream.fileno()
            self.loop.add_reader(fd, self._readable)
            self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            self.loop.remove_reader(self.fd)
            self.fd = None

    def _readable(self) -> None:
        assert self.fd is not None
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.eof = True
            # EOF on a terminal is one Ctrl-D; stop listening until someone asks again.
            self.close()
        self.buffer += data
        self._wake()

    def _wake(self) -> None:
        if self.waiter is None or self.waiter.done():
            return
        line = self._take()
        if line is not None:
            self.waiter.set_result(line)
        elif self.eof:
            self.waiter.set_result(None)

    def _take(self) -> str | None:
        newline = self.buffer.find(b"\n")
        if newline < 0:
            if self.eof and self.buffer:
                line, self.buffer = self.buffer, b""
                return line.decode("utf-8", "replace")
            return None
        line, self.buffer = self.buffer[:newline], self.buffer[newline + 1 :]
        return line.decode("utf-8", "replace").rstrip("\r")

    def interrupt(self) -> bool:
        """Wake a waiting ``readline`` with :data:`_INTERRUPTED`; False if nobody was waiting."""
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(_INTERRUPTED)
            return True
        return False

    async def readline(self, signal: AbortSignal | None = None) -> object:
        line = self._take()
        if line is not None:
            return line
        if self.fd is None:
            if self.eof:
                return None
            # Not pollable (a regular file): a thread, which only ever blocks on plain input.
            text = await asyncio.to_thread(self.stream.readline)
            return text.rstrip("\r\n") if text else None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.cancel()
        waiter: asyncio.Future[object] = self.loop.create_future()
        self.waiter = waiter
        remove: Callable[[], None] | None = None
        if signal is not None:

            def on_abort(_reason: object) -> None:
                with contextlib.suppress(RuntimeError):
                    self.loop.call_soon_threadsafe(_settle, waiter, _ABORTED)

            remove = signal.add_callback(on_abort)
        try:
            return await waiter
        finally:
            if remove is not None:
                remove()
            if self.waiter is waiter:
                self.waiter = None


def _settle(future: asyncio.Future[object], value: object) -> None:
    if not future.done():
        future.set_result(value)


class _Screen:
    """Everything the chat prints: streamed text, cards, notes, prompts."""

    def __init__(self, console: Any, runtime: Any) -> None:
        from toolrt.cli._render import CardRenderer

        self.console = console
        self.runtime = runtime
        self.renderer = CardRenderer(console)
        self.out: TextIO = console.file
        self.mid_line = False
        self.calls: dict[str, Any] = {}

    def text(self, fragment: str) -> None:
        if not self.mid_line:
            self.out.write("assistant> ")
        self.out.write(fragment)
        self.out.flush()
        self.mid_line = not fragment.endswith("\n")

    def end_line(self) -> None:
        if self.mid_line:
            self.out.write("\n")
            self.out.flush()
            self.mid_line = False

    def note(self, text: str, style: str = "dim") -> None:
        self.end_line()
        self.console.print(text, style=style, markup=False, highlight=False)

    def prompt(self, text: str) -> None:
        self.end_line()
        self.out.write(text)
        self.out.flush()

    def call_card(self, execution: Any) -> None:
        from toolrt.loop._replay import render_call_card

        event = self._call_event(execution)
        self.calls[execution.call_id] = event
        self.end_line()
        self.renderer.call(execution.name, render_call_card(event, self.runtime))

    def result_card(self, execution: Any, result: Any) -> None:
        from toolrt.loop._replay import render_result_card
        from toolrt.loop._session_events import Event, tool_result_event

        call = self.calls.pop(execution.call_id, None) or self._call_event(execution)
        new = tool_result_event(execution.call_id, execution.name, result)
        self.end_line()
        card = render_result_card(call, Event(0, new.type, time.time(), new.data), self.runtime)
        self.renderer.result(execution.name, card, is_error=bool(result.is_error))

    @staticmethod
    def _call_event(execution: Any) -> Any:
        from toolrt.loop._session_events import Event, tool_call_event

        arguments = thaw(execution.arguments)
        raw = json.dumps(arguments, ensure_ascii=False)
        new = tool_call_event(execution.call_id, execution.name, raw, arguments, agent=AGENT)
        return Event(0, new.type, time.time(), new.data)


def _usage_line(events: Any) -> str | None:
    totals: dict[str, int] = {}
    for event in events:
        if event.type != "model/assistant" or not isinstance(event.data.get("usage"), dict):
            continue
        for key, value in event.data["usage"].items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    if not totals:
        return None
    parts = [f"{totals.get('input_tokens', 0)} in", f"{totals.get('output_tokens', 0)} out"]
    if "cache_read_input_tokens" in totals or "cache_creation_input_tokens" in totals:
        parts.append(f"cache {totals.get('cache_read_input_tokens', 0)} read")
        parts.append(f"{totals.get('cache_creation_input_tokens', 0)} written")
    return "tokens: " + ", ".join(parts)


def _show_earlier(screen: _Screen, messages: Any) -> None:
    from toolrt._content import content_text
    from toolrt.loop._messages import AssistantMessage, UserMessage

    shown = 0
    for message in messages:
        if isinstance(message, UserMessage) and message.id is None:
            screen.note(f"{_PROMPT}{content_text(message.content)}", "bold")
            shown += 1
        elif isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                screen.note(f"  [{call.name}]")
            if message.text:
                screen.note(f"assistant> {message.text}", "")
    screen.note(f"(resumed: {shown} earlier turn{'s' if shown != 1 else ''})")


async def _chat(arguments: argparse.Namespace, config: Any, model: Any) -> int:
    from rich.console import Console

    from toolrt.cli._config import open_runtime
    from toolrt.loop._agent import Agent

    try:
        session = _open_session(arguments)
    except _UsageError:
        await model.aclose()
        raise
    console = Console(file=sys.stdout, highlight=False, soft_wrap=False)
    lines = _Lines(sys.stdin)
    screen: _Screen | None = None
    turn: dict[str, Any] = {}  # the running turn's controller and task, while one runs

    def on_interrupt() -> None:
        controller = turn.get("controller")
        task = turn.get("task")
        if controller is not None and task is not None and not task.done():
            if controller.signal.aborted:
                task.cancel()  # a second Ctrl-C: stop waiting for the wind-down
            else:
                controller.abort("interrupted (Ctrl-C)")
            return
        lines.interrupt()

    async def approve(request: Any, next: Any) -> Any:
        from toolrt.policies import fingerprint

        if arguments.yes:
            return "allowed-once"
        print_ = fingerprint(request.tool_name, request.arguments)
        if print_ in remembered:
            return "allowed-once"
        assert screen is not None
        if request.execution.parent is not None:
            # A program's sub-call: its card was not drawn (only top-level calls are), so draw it
            # now; the question must show exactly what would run.
            screen.call_card(request.execution)
        why = f" ({request.reason})" if request.reason else ""
        screen.prompt(f"allow {request.tool_name}{why}? [y]es / [n]o / [a]lways for these arguments: ")
        line = await lines.readline(request.signal)
        if line is _ABORTED or line is _INTERRUPTED:
            screen.end_line()
            return "cancelled"
        if line is None:
            screen.end_line()
            return "unavailable"
        choice = str(line).strip().lower()
        if choice in ("a", "always"):
            remembered.add(print_)
            return "allowed-once"
        return "allowed-once" if choice in ("y", "yes") else "rejected"

    remembered: set[str] = set()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        async with open_runtime(config, approvals=approve) as runtime:
            screen = _Screen(console, runtime)
            shown = screen

            async def show_call(execution: Any, next: Any) -> Any:
                if execution.parent is None:
                    shown.call_card(execution)
                return await next()

            def show_result(execution: Any, result: Any) -> None:
                if execution.parent is None:
                    shown.result_card(execution, result)

            runtime.on("tools/pre-execute", show_call, prepend=True)
            runtime.on("tools/result", show_result)
            if arguments.yes or not config.policies.ask:
                # The live line redraws the bottom line of the screen, which would garble an
                # approval prompt; so it is on only when nothing can ask.
                runtime.on("tools/execute", _live_run_line(console, runtime, screen))
            agent = Agent(
                runtime,
                model,
                key=AGENT,
                instructions=arguments.instructions or DEFAULT_INSTRUCTIONS,
                session=session,
                max_steps=arguments.max_steps,
            )
            where = f", log {session.path}" if session.path else ""
            screen.note(f"toolrt chat · {_describe(model)} · workspace {config.workspace}{where}")
            if agent.messages:
                _show_earlier(screen, agent.messages)
            screen.note("Ctrl-C stops the current answer; Ctrl-D (or Ctrl-C twice) ends the session.")
            try:
                await _prompt_loop(agent, lines, screen, turn)
            finally:
                agent.close()
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)
        lines.close()
        session.close()
        with contextlib.suppress(Exception):
            await model.aclose()
    return 0


async def _prompt_loop(agent: Any, lines: _Lines, screen: _Screen, turn: dict[str, Any]) -> None:
    """Prompt, run the turn, repeat; until Ctrl-D, ``/exit``, or Ctrl-C twice in a row at the prompt."""
    interrupts = 0
    while True:
        screen.prompt(_PROMPT)
        line = await lines.readline()
        if line is None:
            screen.end_line()
            break
        if line is _INTERRUPTED:
            interrupts += 1
            if interrupts >= 2:
                screen.end_line()
                break
            screen.note("\n(Ctrl-C again or Ctrl-D to quit)")
            continue
        interrupts = 0
        text = str(line).strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        await _run_turn(agent, text, screen, turn)


async def _run_turn(agent: Any, text: str, screen: _Screen, turn: dict[str, Any]) -> None:
    controller = AbortController()
    first = agent.session.next_seq
    task = asyncio.ensure_future(agent.run_turn(text, signal=controller.signal, on_text=screen.text))
    turn["controller"], turn["task"] = controller, task
    try:
        result = await task
        if result.reason == "aborted":
            screen.note("(turn cancelled)", "yellow")
        elif result.reason == "step-budget":
            screen.note("(the turn used its step budget; ask again to continue)", "yellow")
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        screen.note("(turn cancelled)", "yellow")
    except Exception as error:  # a provider error ends the turn, not the session
        screen.note(f"error: {type(error).__name__}: {error}", "red")
    finally:
        turn.clear()
        screen.end_line()
    usage = _usage_line(event for event in agent.session.events() if event.seq >= first)
    if usage is not None:
        screen.note(usage)


def _live_run_line(console: Any, runtime: Any, screen: _Screen) -> Callable[[Any, Any], Any]:
    """A ``tools/execute`` wrapper: a live line while a top-level ``run_code`` runs, then its summary."""
    from toolrt import RUN_CODE_NAME
    from toolrt.cli._render import LiveRunLine

    async def wrap(execution: Any, next: Any) -> Any:
        if execution.name != RUN_CODE_NAME or execution.parent is not None:
            return await next()
        screen.end_line()
        with LiveRunLine(console, runtime) as line:
            result = await next()
        screen.note(line.summary())
        return result

    return wrap


def _describe(model: Any) -> str:
    provider = "anthropic" if type(model).__name__ == "AnthropicModel" else "openai"
    return f"{provider} {model.model} at {model.client.base_url}"
