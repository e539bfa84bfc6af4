"""The ``toolrt demo`` scenario: a small runtime and four calls that exercise the pipeline."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolrt._abort import AbortSignal
from toolrt._decisions import Deny, PreToolDecision
from toolrt._execution import ToolExecution, ToolExecutionInput
from toolrt._results import ToolExecutionResult, ToolFailure
from toolrt._tool_decorator import tool
from toolrt._tool_runtime import ToolRuntime

_NOTES = {"groceries": "eggs, flour, coffee", "ideas": "a tool layer that never crashes the agent"}

# What a model emitted: (tool name, raw JSON arguments), one call of each kind.
DEMO_CALLS: tuple[tuple[str, str, str], ...] = (
    ("success", "add", '{"a": 2, "b": 3}'),
    ("invalid arguments", "add", '{"a": "two", "b": 3}'),
    ("denied by policy", "delete_note", '{"name": "groceries"}'),
    ("unknown tool", "send_email", '{"to": "boss@example.com"}'),
)


@dataclass
class Trace:
    """What the demo's listeners observed for each call id."""

    decisions: dict[str, str] = field(default_factory=dict)
    results: dict[str, ToolExecutionResult] = field(default_factory=dict)


def build_demo_runtime() -> tuple[ToolRuntime, Trace]:
    """Three tools, a deny-deletes policy, and listeners that record what happened."""
    runtime = ToolRuntime()
    trace = Trace()

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first addend.
            b: The second addend.
        """
        return a + b

    @tool(is_concurrency_safe=lambda args: True)
    async def read_note(name: str) -> str:
        """Read one of the user's notes.

        Args:
            name: The note's name.
        """
        return _NOTES[name]

    @tool
    async def delete_note(name: str) -> None:
        """Delete one of the user's notes.

        Args:
            name: The note's name.
        """
        _NOTES.pop(name, None)

    for definition in (add, read_note, delete_note):
        runtime.register(definition)

    async def no_deletes(execution: ToolExecution, next: Any) -> PreToolDecision:
        if execution.name.startswith("delete_"):
            return Deny(f"{execution.name} needs a human: ask the user to delete it themselves")
        decision: PreToolDecision = await next()
        return decision

    async def record_decision(execution: ToolExecution, next: Any) -> PreToolDecision:
        decision: PreToolDecision = await next()
        trace.decisions[execution.call_id] = type(decision).__name__.lower() + (
            f": {decision.reason}" if isinstance(decision, Deny) else ""
        )
        return decision

    runtime.on("tools/pre-execute", record_decision)
    runtime.on("tools/pre-execute", no_deletes)
    runtime.on("tools/result", lambda execution, result: trace.results.__setitem__(execution.call_id, result))
    return runtime, trace


async def run_demo(console: Any) -> int:
    """Run the four calls and print one card each."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    runtime, trace = build_demo_runtime()
    console.print(
        Panel(
            Text.assemble(
                ("toolrt demo", "bold"),
                " — one call of each kind through the real pipeline.\n",
                "Tools the model sees: ",
                (", ".join(schema["name"] for schema in runtime.schemas()), "bold"),
                ".\nPolicy: a tools/pre-execute listener denies every delete_* tool.",
            ),
            border_style="blue",
        )
    )
    signal = AbortSignal()
    for index, (kind, name, raw_arguments) in enumerate(DEMO_CALLS, start=1):
        call_id = f"call-{index}"
        result = await runtime.execute(
            ToolExecutionInput(call_id=call_id, name=name, arguments=json.loads(raw_arguments), signal=signal)
        )
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        grid.add_row("model called", Text(f"{name}({raw_arguments})"))
        grid.add_row("policy", Text(trace.decisions.get(call_id, "not consulted (failed before policy)")))
        if isinstance(result, ToolFailure):
            info = result.error.info
            outcome = f"error · {info.code if info else 'no code'}"
        else:
            outcome = f"success · value {json.dumps(result.value)}"
        grid.add_row("outcome", Text(outcome))
        model_reads = "\n".join(str(block.get("text", block)) for block in result.content)
        grid.add_row("model reads", Text(model_reads, style="bold"))
        observed = "yes" if trace.results.get(call_id) is result else "NO"
        grid.add_row("tools/result", Text(f"observed once: {observed}"))
        console.print(
            Panel(
                grid,
                title=f"[bold]{index}. {kind}[/bold]",
                title_align="left",
                border_style="red" if result.is_error else "green",
            )
        )
    console.print(
        "Every outcome above is a result the model can read and correct from; none raised into the agent."
    )
    return 0
