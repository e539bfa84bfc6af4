"""Claude Code → harness tool-name translation (dsh-cc addition, contract §2.20).

Two vocabularies name the same tools. The harness registers its global tools under its own, mostly
lowercase names (``read``, ``bash``, ``web_fetch``; a few capitalized: ``NotebookEdit``, ``Sleep``),
while Claude Code (CC) config authors write CC names (``Read``, ``Bash``, ``WebFetch``), sometimes
with an argument spec (``Bash(git status)``).

Why translate at the ingestion boundary, and nowhere else? ``restrict()`` validates names strictly
and rejects an unknown one, so a CC name handed through verbatim fails the whole restriction (and, at
session start, the whole session). Translating once, where a CC-authored list *enters* the system
(agent frontmatter, skill activation), means everything downstream — the registry, scopes, the
policy pipeline, the transcript — speaks one vocabulary and never has to guess which spelling it
holds. Comparing or restricting raw CC names deeper in would need every seam to know both tables.
The two directions back out of the harness vocabulary are match-only helpers:

- :func:`translate_tool_names` — allow/deny lists bound for ``restrict()``. ``"strict"`` (trusted,
  load-time config) passes unknown names through so ``restrict()`` fails loudly with its own error;
  ``"lenient"`` (user/model-driven data) drops unknown names with a diagnostic and returns ``None``
  ("no restriction") when nothing survives — one dropped name must never kill a session.
- :func:`cc_tool_aliases` — every name a harness tool answers to, for comparisons (permission rules,
  hook matchers). Aliases are match-only and are never written back into a restriction.
- :func:`cc_canonical_tool_name` — the CC spelling for CC-facing payloads (e.g. a hook's
  ``tool_name``), or the input unchanged when there is none.

>>> translate_tool_names(["Read", "Bash(git status)"], "strict")
['read', 'read_image', 'bash']
>>> cc_tool_aliases("edit")
['edit', 'Edit', 'MultiEdit']
>>> cc_canonical_tool_name("subagent_fork")
'Task'
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

__all__ = [
    "CC_TO_HARNESS_TOOLS",
    "KNOWN_HARNESS_TOOLS",
    "ToolNameTranslationPolicy",
    "cc_canonical_tool_name",
    "cc_tool_aliases",
    "translate_tool_names",
]

ToolNameTranslationPolicy = Literal["strict", "lenient"]
"""``"strict"``: trusted config, fail-fast downstream. ``"lenient"``: user/model data, drop unknown names."""

KNOWN_HARNESS_TOOLS: frozenset[str] = frozenset(
    {
        "EnterWorktree", "ExitWorktree", "NotebookEdit", "Sleep", "ToolSearch",
        "ask_user_question", "bash", "create_goal", "edit", "exit_plan_mode",
        "get_goal", "glob", "grep", "interrupt_agent", "job_kill", "job_list",
        "job_output", "list_agents", "ralph", "read", "read_image", "send_message",
        "skill", "subagent", "subagent_fork", "todo_write", "update_goal",
        "web_fetch", "web_search", "workflow", "write",
    }
)  # fmt: skip
"""The 31 global tool names the harness registers: the universe every CC name translates *into*.

The lenient policy uses it to pass an already-harness name through untouched instead of dropping it.
"""

CC_TO_HARNESS_TOOLS: Mapping[str, tuple[str, ...]] = types.MappingProxyType(
    {
        "Read": ("read", "read_image"),
        "Write": ("write",),
        "Edit": ("edit",),
        "MultiEdit": ("edit",),
        "NotebookEdit": ("NotebookEdit",),
        "Bash": ("bash",),
        "BashOutput": ("job_output",),
        "KillBash": ("job_kill",),
        "Grep": ("grep",),
        "Glob": ("glob",),
        "WebFetch": ("web_fetch",),
        "WebSearch": ("web_search",),
        "TodoWrite": ("todo_write",),
        "Task": ("subagent", "subagent_fork"),
        "Skill": ("skill",),
        "AskUserQuestion": ("ask_user_question",),
        "ExitPlanMode": ("exit_plan_mode",),
        "Workflow": ("workflow",),
        "Sleep": ("Sleep",),
        "ToolSearch": ("ToolSearch",),
        "EnterWorktree": ("EnterWorktree",),
        "ExitWorktree": ("ExitWorktree",),
    }
)
"""CC tool name → harness tool name(s), read-only; iteration order is the table order.

One CC tool may answer through several harness tools (``Read`` covers ``read`` and ``read_image``),
so each value is a tuple; a tool the harness exposes under the CC spelling maps to itself
(``NotebookEdit``). The order matters: :func:`cc_tool_aliases` lists CC names in it and
:func:`cc_canonical_tool_name` picks the first match (``edit`` → ``Edit``, not ``MultiEdit``).

Deliberately unmapped: ``LS`` (legacy alias, no harness equivalent), ``EnterPlanMode`` (plan mode is
not a tool in the harness), ``CronCreate``/``CronDelete``/``CronList`` (no harness equivalent) and
``mcp__*`` (MCP tools are registered under their own names, which a caller lists explicitly).
"""


def _strip_arg_spec(name: str) -> str:
    """Drop everything from the first ``(``: ``Bash(git status)`` → ``Bash``.

    ``restrict()`` is name-level only, so this deliberately *widens* a name+args rule to the whole
    tool: a per-args constraint cannot be honoured there, and keeping the suffix would produce a name
    ``restrict()`` rejects.
    """
    paren = name.find("(")
    return name if paren == -1 else name[:paren]


def translate_tool_names(
    names: Iterable[str],
    policy: ToolNameTranslationPolicy,
    on_diagnostic: Callable[[str], None] | None = None,
) -> list[str] | None:
    """Translate CC tool names into harness names for a ``restrict()``-style allow/deny list.

    Each name loses its argument spec, then: a CC name in :data:`CC_TO_HARNESS_TOOLS` expands to every
    mapped harness name; any other name passes through verbatim under ``"strict"``, and under
    ``"lenient"`` passes only if it is in :data:`KNOWN_HARNESS_TOOLS` — otherwise ``on_diagnostic``
    hears ``dropping unknown tool name "<name>" from CC tool list`` and the name is dropped. The
    result is deduplicated in first-occurrence order.

    Returns a new list; under ``"strict"`` always a list (``[]`` for empty input). Under
    ``"lenient"``, when nothing survives, ``on_diagnostic`` hears ``dropping all CC tool names —
    resulting tool restriction is empty`` and the result is ``None``, meaning *no restriction*.

    >>> notes: list[str] = []
    >>> translate_tool_names(["Bash", "pwsh"], "lenient", notes.append), notes
    (['bash'], ['dropping unknown tool name "pwsh" from CC tool list'])
    """
    if isinstance(names, str):
        # A bare string is an Iterable[str] of characters — never what a caller means.
        raise TypeError("translate_tool_names() expects an iterable of tool names, not a single str")
    if policy not in ("strict", "lenient"):
        raise ValueError(f"unknown tool-name translation policy {policy!r} (expected 'strict' or 'lenient')")
    diagnose = on_diagnostic if on_diagnostic is not None else _noop
    results: dict[str, None] = {}  # insertion-ordered set
    for raw_name in names:
        name = _strip_arg_spec(raw_name)
        mapped = CC_TO_HARNESS_TOOLS.get(name)
        if mapped is not None:
            results.update(dict.fromkeys(mapped))
        elif policy == "strict" or name in KNOWN_HARNESS_TOOLS:
            results[name] = None
        else:
            diagnose(f'dropping unknown tool name "{name}" from CC tool list')
    if policy == "lenient" and not results:
        diagnose("dropping all CC tool names — resulting tool restriction is empty")
        return None
    return list(results)


def cc_tool_aliases(name: str) -> list[str]:
    """Every name one tool is matched by (permission rules, hook matchers), the input first.

    A CC name in the table yields itself followed by its mapped harness names
    (``"Bash"`` → ``["Bash", "bash"]``, exactly ``[name, *mapped]``). Any other name yields itself
    followed by each CC name whose mapping includes it, in table order, without repeats
    (``"edit"`` → ``["edit", "Edit", "MultiEdit"]``; ``"pwsh"`` → ``["pwsh"]``). Derived from
    :data:`CC_TO_HARNESS_TOOLS` — there is no second, hand-written reverse table.
    """
    mapped = CC_TO_HARNESS_TOOLS.get(name)
    if mapped is not None:
        return [name, *mapped]
    aliases = [name]
    for cc_name, harness_names in CC_TO_HARNESS_TOOLS.items():
        if name in harness_names and cc_name not in aliases:
            aliases.append(cc_name)
    return aliases


def cc_canonical_tool_name(name: str) -> str:
    """The CC spelling of a tool for CC-facing payloads (e.g. a hook's ``tool_name``).

    The first CC name (table order) whose mapping contains ``name``, else ``name`` unchanged:
    ``"subagent_fork"`` → ``"Task"``, ``"edit"`` → ``"Edit"``, ``"Bash"`` → ``"Bash"`` (already CC),
    ``"ralph"`` → ``"ralph"`` (harness-only), ``"NotebookEdit"`` → ``"NotebookEdit"`` (maps to itself).
    """
    for cc_name, harness_names in CC_TO_HARNESS_TOOLS.items():
        if name in harness_names:
            return cc_name
    return name


def _noop(_message: str) -> None:
    return None
