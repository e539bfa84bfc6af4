"""The ``tools:groups`` section: which system each native tool belongs to, said once per group.

A deployment that registers several objects' methods (a file system, a trading account, a vehicle)
gives the model tools whose names alone do not say which system they act on. Catalogues that
repeat "This tool belongs to …" in every description pay for the same sentence once per tool; here
each group's description is one line of the prompt, followed by its tools' names, and the tool
descriptions stay the tools' own. Code Mode scopes get the same information from the SDK's group
headers, so the section is empty for them.

The section joins a connected prompt only once the runtime holds a grouped tool, so a prompt
without groups assembles exactly as before.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Final

from toolrt._events import Disposer
from toolrt._prompt.assembly import PromptContext
from toolrt._prompt.system_prompt import SystemPrompt
from toolrt._registry import ToolsChange
from toolrt._tool_definition import ToolDefinition, ToolGroup
from toolrt._tool_runtime import ToolRuntime

__all__ = ["GROUPS_ORDER", "GROUPS_SECTION", "connect_tool_groups", "render_tool_groups"]

GROUPS_SECTION: Final = "tools:groups"
GROUPS_ORDER: Final = 98
"""Ahead of Code Mode's ``tools:code-only`` (99) and per-tool guidance (100-199): which systems
exist comes before how each tool is used."""

_SPACE: Final = re.compile(r"\s+")


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def render_tool_groups(tools: Mapping[str, ToolDefinition]) -> str:
    """The section text for ``tools`` (name → definition): one line per group, ``""`` without groups.

    Groups are ordered by name, their tools by name (UTF-16 order, like the tool list), so the text
    is byte-identical for an unchanged tool set.

    >>> from toolrt import tool
    >>> @tool(group=ToolGroup("Files", "A file system with a current directory."))
    ... def cd(folder: str) -> str:
    ...     '''Change the current directory.'''
    ...     return folder
    >>> print(render_tool_groups({"cd": cd}))
    ## Tool groups
    <BLANKLINE>
    - Files (cd): A file system with a current directory.
    """
    members: dict[ToolGroup, list[str]] = {}
    for name, definition in tools.items():
        if definition.group is not None:
            members.setdefault(definition.group, []).append(name)
    if not members:
        return ""
    lines = ["## Tool groups", ""]
    for group in sorted(members, key=lambda group: (_utf16(group.name), _utf16(group.description))):
        names = ", ".join(sorted(members[group], key=_utf16))
        about = _line(group.description)
        lines.append(f"- {_line(group.name)} ({names})" + (f": {about}" if about else ""))
    return "\n".join(lines)


def connect_tool_groups(prompt: SystemPrompt, runtime: ToolRuntime) -> Disposer:
    """Add the ``tools:groups`` section to ``prompt`` once ``runtime`` holds a grouped tool (then keep
    it: its text is ``""`` whenever a scope sees no group); undone by the disposer."""
    added: list[Disposer] = []

    def text(context: PromptContext) -> str:
        if runtime.mode_for(context.scope) != "native":
            return ""  # the SDK's group headers say it
        return render_tool_groups(runtime.visible_tools(context.scope))

    def ensure() -> None:
        if added or not runtime.has_tool_groups():
            return
        # A deployment that registered its own "tools:groups" keeps it: theirs is the one shown.
        with contextlib.suppress(ValueError):
            added.append(prompt.section(GROUPS_SECTION, GROUPS_ORDER, text))

    def on_change(change: ToolsChange) -> None:
        if change.kind == "register":
            ensure()

    listener = runtime.on("tools/change", on_change)
    ensure()

    def dispose() -> None:
        listener()
        for remove in added:
            remove()
        added.clear()

    return Disposer(dispose, runtime)
