"""``toolrt replay LOG``: a session log drawn as the conversation it records, with the tools' cards.

The cards come from the tools the configuration registers (``present_call`` / ``present_result``
are pure, so a log written long ago renders as it did live); a tool that is gone gets the generic
card. No MCP server is started: a replay must not run anything. A log that is missing, unreadable
or corrupt is one line (exit 2); a torn last line (a crash mid-write) is shown, then skipped.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from toolrt._content import content_text
from toolrt._errors import MAX_ECHO_CHARS, clip_text
from toolrt.cli._config import CliConfig, open_runtime
from toolrt.cli._render import CardRenderer

__all__ = ["add_replay_parser", "replay_command"]


def add_replay_parser(commands: Any) -> None:
    """The ``replay`` command on the CLI's subparsers."""
    replay = commands.add_parser("replay", help="render a session log (JSONL) as cards")
    replay.add_argument("log", help="the session log file")


async def replay_command(arguments: argparse.Namespace, config: CliConfig, console: Any) -> int:
    """Render the log; 0, or 2 when it cannot be read."""
    from rich.panel import Panel
    from rich.rule import Rule
    from rich.text import Text

    from toolrt.loop import SessionLog, SessionLogCorruptError
    from toolrt.loop._replay import ApprovalItem, MessageItem, ToolItem, TurnItem, replay

    shown = clip_text(repr(arguments.log), MAX_ECHO_CHARS)
    try:
        read = SessionLog.read(arguments.log)
    except FileNotFoundError:
        return _fail(f"cannot read the log {shown}: no such file")
    except IsADirectoryError:
        return _fail(f"cannot read the log {shown}: it is a directory; pass a session log file")
    except PermissionError:
        return _fail(f"cannot read the log {shown}: permission denied")
    except SessionLogCorruptError as error:
        return _fail(f"the log {shown} is corrupt: {error}")
    except OSError as error:
        return _fail(f"cannot read the log {shown}: {error.strerror or error}")
    if not read.events and read.torn is None:
        return _fail(f"the log {shown} is empty: no events to replay")
    renderer = CardRenderer(console)
    async with open_runtime(replace(config, mode="native", mcp_servers=())) as runtime:
        items = replay(read.events, runtime)
    for item in items:
        if isinstance(item, TurnItem):
            if item.kind == "turn-start":
                console.print(Rule(f"turn {item.event.seq}", style="dim"))
            else:
                console.print(Text(f"turn ended: {item.reason}", style="dim"))
        elif isinstance(item, MessageItem):
            text = content_text(item.message.content) if item.kind != "assistant" else item.message.text  # type: ignore[union-attr]
            if item.kind == "assistant" and not text:
                continue
            style = {"user": "blue", "assistant": "white", "context": "dim"}[item.kind]
            console.print(Panel(Text(text), title=item.kind, title_align="left", border_style=style))
        elif isinstance(item, ToolItem):
            prefix = f"↳ {item.parent_call_id} · " if item.kind == "sub-call" else ""
            renderer.call(prefix + item.name, item.call_card)
            if item.result_card is None:
                console.print(Text("no result logged (the session ended during this call)", style="yellow"))
            else:
                renderer.result(prefix + item.name, item.result_card, is_error=item.is_error is True)
        elif isinstance(item, ApprovalItem):
            reason = f" ({item.reason})" if item.reason else ""
            renderer.decision(
                f"ask{reason} → {item.outcome or 'no answer logged'}",
                ok=bool(item.outcome and item.outcome.startswith("allowed")),
            )
    if read.torn is not None:
        console.print(
            Text(
                f"the last line ({read.torn.line_number}) is torn ({read.torn.reason}); it was skipped",
                style="yellow",
            )
        )
    return 0


def _fail(message: str) -> int:
    print(f"toolrt replay: error: {message}", file=sys.stderr)
    return 2
