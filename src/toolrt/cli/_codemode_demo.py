"""``toolrt demo``: a scripted model answers a question about the current directory in Code Mode.

The model is scripted (no model API is called, and the demo says so first): it writes one Python
program; the program runs in a fresh, kernel-confined child process against the read-only file tools
(``read``, ``glob``, ``grep``); every binding call goes through the full policy pipeline (one is denied by a
policy listener, one direct file read is blocked by the kernel); only the program's printed output
returns to the model, which answers from it.
"""

from __future__ import annotations

import os
from typing import Any

from toolrt._content import content_text
from toolrt._decisions import Deny, PreToolDecision
from toolrt._execution import ToolExecution
from toolrt._tool_runtime import ToolRuntime
from toolrt.cli._render import LiveRunLine
from toolrt.codemode._run_output import render_run_code_output
from toolrt.loop._agent import Agent
from toolrt.loop._messages import AssistantMessage, ModelRequest, ToolCall, ToolResultMessage
from toolrt.loop._scripted_model import ScriptedModel
from toolrt.sandbox import PythonSandboxRuntime
from toolrt.tools import fs_tools

QUESTION = "Which are the three largest Python files here, and how many lines does each have?"

PROGRAM = """\
import asyncio

found = await tools.glob({"pattern": "**/*.py"})
# One read per file, overlapped; limit=1: the size and line count suffice.
reads = [tools.read({"path": path, "limit": 1}) for path in found["paths"]]
files = await asyncio.gather(*reads)
largest = sorted(files, key=lambda file: file["size"], reverse=True)[:3]
for file in largest:
    lines, size = file["totalLines"], file["size"]
    print(f"{file['path']}: {lines} lines ({size:,} bytes)")
if not largest:
    print("There are no Python files here.")

try:  # a tool call the policy refuses comes back as ToolCallError
    await tools.read({"path": "../../etc/passwd"})
except ToolCallError as error:
    print(f"{error.toolName} was refused: {error}")

try:  # the program itself cannot reach the host's files
    open("/etc/passwd").read()
    print("direct read of /etc/passwd: ALLOWED (not confined!)")
except PermissionError:
    print("direct read of /etc/passwd: blocked, refused by the sandbox")
except FileNotFoundError:  # the sandbox does not mount the host's /etc
    print("direct read of /etc/passwd: blocked, refused by the sandbox")

return [file["path"] for file in largest]
"""

_SHOWN_SUB_CALLS = 6
"""Sub-calls listed one by one; the rest are counted (a large directory makes hundreds of reads)."""


def _answer(request: ModelRequest) -> AssistantMessage:
    result = next(message for message in reversed(request.messages) if isinstance(message, ToolResultMessage))
    lines = content_text(result.content).splitlines()
    # Answer from the output, in the model's words: repeating it whole would print the block twice.
    if result.is_error or not lines:
        return AssistantMessage(text="The program failed, so I cannot answer; its error is above.")
    return AssistantMessage(
        text=f"The largest Python file here is {lines[0]}. Reading outside the project was refused twice: "
        "by the policy (a tool call) and by the sandbox (a direct open)."
    )


def _outside_project(execution: ToolExecution, next: Any) -> Any:
    path = execution.arguments.get("path", ".") if isinstance(execution.arguments, dict) else "."
    if execution.name == "read" and (os.path.isabs(path) or ".." in path.split("/")):
        return Deny(f"reading outside the project is off limits ({path})")
    return next()


async def run_codemode_demo(console: Any, *, allow_unconfined: bool = False) -> int:
    """Run the scenario and print its cards. Exit status 1 when the sandbox is unavailable."""
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    code_runtime = PythonSandboxRuntime(pool_size=0, allow_unconfined=allow_unconfined)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    for definition in fs_tools(os.getcwd(), read_only=True):
        runtime.register(definition)
    decisions: dict[str, str] = {}

    async def record(execution: ToolExecution, next: Any) -> PreToolDecision:
        decision: PreToolDecision = await next()
        decisions[execution.call_id] = (
            f"deny — {decision.reason}" if isinstance(decision, Deny) else type(decision).__name__.lower()
        )
        return decision

    runtime.on("tools/pre-execute", record)
    runtime.on("tools/pre-execute", _outside_project)
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall(
                        "call_1",
                        "run_code",
                        _json({"code": PROGRAM, "description": "Find the largest Python files"}),
                    ),
                )
            ),
            _answer,
        ]
    )
    agent = Agent(runtime, model, key="demo-agent", instructions="Answer questions about the user's files.")
    console.print(
        Text.assemble(
            ("The model in this demo is scripted", "bold yellow"),
            ": no model API is called. It always writes the program below; everything after it is real —"
            " the sandbox, the policy pipeline, the tools.",
        )
    )
    console.print(Panel(Text(QUESTION, style="bold"), title="user", title_align="left", border_style="blue"))
    console.print(
        Panel(
            Syntax(PROGRAM, "python", theme="ansi_dark", line_numbers=True, word_wrap=True),
            title="the model's run_code program",
            title_align="left",
            border_style="cyan",
        )
    )
    try:
        # On a terminal: the elapsed time and the sub-calls so far, while the program runs.
        with LiveRunLine(console, runtime):
            turn = await agent.run_turn(QUESTION)
    finally:
        agent.close()
        await code_runtime.aclose()

    events = agent.session.events()
    lines = Text()
    dispatched = [event for event in events if event.type == "tool/code-dispatch"]
    # The policy's refusals are the point of the demo: always list them, then the first calls.
    shown = [event for event in dispatched if event.data["is_error"]]
    shown = sorted(
        shown
        + [event for event in dispatched if not event.data["is_error"]][
            : max(0, _SHOWN_SUB_CALLS - len(shown))
        ],
        key=lambda event: event.seq,
    )
    for event in shown:
        data = event.data
        arguments = _shorten(_json(data["arguments"]), 48)
        lines.append(f"{data['sub_call_id']}  ", style="dim")
        lines.append(f"{data['name']}({arguments})\n", style="bold")
        lines.append("    policy: ", style="dim")
        lines.append(decisions.get(data["sub_call_id"], "—"))
        lines.append("  →  ", style="dim")
        outcome = _shorten(content_text(data["content"]), 36)
        lines.append(
            ("error: " if data["is_error"] else "ok: ") + outcome + "\n",
            style="red" if data["is_error"] else "green",
        )
    hidden: dict[str, int] = {}
    for event in dispatched:
        if event not in shown:
            hidden[event.data["name"]] = hidden.get(event.data["name"], 0) + 1
    if hidden:
        counted = ", ".join(f"{name} ×{count}" for name, count in hidden.items())
        lines.append(f"… and {sum(hidden.values())} more, all ok: {counted}\n", style="dim")
    lines.rstrip()
    console.print(
        Panel(
            lines,
            title=f"the {len(dispatched)} tool calls the program made (each through the full pipeline)",
            title_align="left",
            border_style="cyan",
        )
    )
    result_event = next(event for event in events if event.type == "tool/result")
    model_reads = content_text(result_event.data["content"])
    console.print(
        Panel(
            Text(model_reads),
            title="what run_code returned to the model (only what the program printed)",
            title_align="left",
            border_style="magenta",
        )
    )
    console.print(
        Panel(
            Text(turn.text, style="bold"),
            title="the model's answer",
            title_align="left",
            border_style="green",
        )
    )
    isolation = (result_event.data.get("meta") or {}).get("isolation") or code_runtime.isolation.as_json()
    layers = ", ".join(isolation.get("layers") or []) or "none"
    abi = isolation.get("landlockAbi")
    console.print(
        Panel(
            Text.assemble(
                ("enforcement: ", "dim"),
                (str(isolation.get("enforcement")), "bold"),
                ("   layers: ", "dim"),
                layers,
                ("   Landlock ABI: ", "dim"),
                str(abi) if abi is not None else "—",
            ),
            title="isolation achieved for this run",
            title_align="left",
            border_style="green" if isolation.get("enforcement") == "full" else "yellow",
        )
    )
    if result_event.data["is_error"]:
        console.print("[red]The program did not complete: see the run_code result above.[/red]")
        return 1
    return 0


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _shorten(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["PROGRAM", "QUESTION", "render_run_code_output", "run_codemode_demo"]
