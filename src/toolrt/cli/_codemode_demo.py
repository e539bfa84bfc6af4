"""``toolrt demo``: a scripted model answers a question about the current directory in Code Mode.

The model writes one Python program; it runs in a fresh, kernel-confined child process against three
read-only file tools; every binding call goes through the full policy pipeline (one is denied by a
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
from toolrt.codemode._run_output import render_run_code_output
from toolrt.loop._agent import Agent
from toolrt.loop._messages import AssistantMessage, ModelRequest, ToolCall, ToolResultMessage
from toolrt.loop._scripted_model import ScriptedModel
from toolrt.sandbox import PythonSandboxRuntime
from toolrt.tools import file_tools

QUESTION = "Which are the three largest Python files here, and how many lines does each have?"

PROGRAM = """\
import asyncio

files = await tools.list_files({"path": ".", "pattern": "*.py", "recursive": True})
largest = sorted(files, key=lambda entry: entry["size"], reverse=True)[:3]
infos = await asyncio.gather(*(tools.file_info({"path": entry["path"]}) for entry in largest))
for info in infos:
    print(f"{info['path']}: {info['lines']} lines ({info['size']:,} bytes)")
if not infos:
    print("There are no Python files here.")

try:  # a tool call the policy refuses comes back as ToolCallError
    await tools.read_file({"path": "../../etc/passwd"})
except ToolCallError as error:
    print(f"{error.toolName} was refused: {error}")

try:  # the program itself cannot reach the host's files: the kernel says no
    open("/etc/passwd").read()
    print("direct read of /etc/passwd: ALLOWED (not confined!)")
except OSError as error:
    print(f"direct read of /etc/passwd: blocked ({type(error).__name__})")

return [info["path"] for info in infos]
"""


def _answer(request: ModelRequest) -> AssistantMessage:
    result = next(message for message in reversed(request.messages) if isinstance(message, ToolResultMessage))
    return AssistantMessage(text="Here is what the program found:\n" + content_text(result.content))


def _outside_project(execution: ToolExecution, next: Any) -> Any:
    path = execution.arguments.get("path", ".") if isinstance(execution.arguments, dict) else "."
    if execution.name == "read_file" and (os.path.isabs(path) or ".." in path.split("/")):
        return Deny(f"read_file outside the project is off limits ({path})")
    return next()


async def run_codemode_demo(console: Any, *, allow_unconfined: bool = False) -> int:
    """Run the scenario and print its cards. Exit status 1 when the sandbox is unavailable."""
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    code_runtime = PythonSandboxRuntime(pool_size=0, allow_unconfined=allow_unconfined)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    for definition in file_tools(os.getcwd()):
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
    console.print(Panel(Text(QUESTION, style="bold"), title="user", title_align="left", border_style="blue"))
    console.print(
        Panel(
            Syntax(PROGRAM, "python", theme="ansi_dark", line_numbers=True),
            title="the model's run_code program",
            title_align="left",
            border_style="cyan",
        )
    )
    try:
        turn = await agent.run_turn(QUESTION)
    finally:
        agent.close()
        await code_runtime.aclose()

    events = agent.session.events()
    lines = Text()
    for event in events:
        if event.type != "tool/code-dispatch":
            continue
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
    console.print(
        Panel(
            lines,
            title="tool calls the program made (each through the full pipeline)",
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
