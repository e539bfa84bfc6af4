"""Tool search for Code Mode: a large tool set as one line per tool, signatures on demand.

At 150 tools the typed SDK is tens of thousands of tokens resent on every turn, though a task uses
two or three of them. Once a runtime turns search on (:func:`enable_tool_search`) and a scope sees
more than ``after`` tools, the ``tools:sdk`` section lists each tool as its name and a one-line
summary, and the program asks for what it needs: ``print(await tools.describe(["a", "b"]))`` or
``print(await tools.search("refunds by payment method"))`` return the full typed declarations
(the same renderer as the full SDK), and only what the program prints re-enters the context
(contract TS7–TS10). Every listed tool stays callable as before: deferral changes what the
prompt shows, never what the program may call.

Policy: the listing, ``describe`` and ``search`` read ``runtime.visible_tools(agent)``, the set the
bridge binds — so a tool restricted away from a scope (``is_admitted`` false) is neither listed,
described, found nor callable, exactly as without search. A real tool named ``describe`` or
``search`` keeps its name; the helper is then not offered under it.

Ranking is Okapi BM-25 (k1 = 1.2, b = 0.75) over a tool's name (its words counted twice: a name says more
than a sentence of its description) and its description; standard library only.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from toolrt._json import js_string, thaw
from toolrt._registry import RUN_CODE_NAME
from toolrt.codemode._code_runtime import BindingAnswer
from toolrt.codemode._py_names import is_method_name, utf16_key
from toolrt.codemode._sdk_python import SDK_INSTRUCTIONS_PY, render_tools_sdk_py
from toolrt.codemode._sdk_tool import SdkTool
from toolrt.codemode._sdk_typescript import SDK_INSTRUCTIONS_TS, render_tools_sdk_ts

if TYPE_CHECKING:
    from toolrt._tool_definition import ToolDefinition
    from toolrt._tool_runtime import ToolRuntime

__all__ = [
    "DESCRIBE_NAME",
    "SEARCH_NAME",
    "ToolSearch",
    "declarations_renderer",
    "enable_tool_search",
    "helper_names",
    "rank_tools",
    "render_deferred_sdk",
    "sdk_tools",
    "search_bindings",
    "summary_line",
    "tool_search_of",
]

DESCRIBE_NAME: Final = "describe"
SEARCH_NAME: Final = "search"
_WORD: Final = re.compile(r"[a-z0-9]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s")
MAX_SUMMARY: Final = 100


@dataclass(frozen=True)
class ToolSearch:
    """How a runtime defers its tools in Code Mode.

    ``after``: a scope seeing more than this many tools (``run_code`` not counted) gets the one-line
    listing; ``0`` defers always ("on request"). ``limit``: how many tools ``search`` returns.
    """

    after: int = 0
    limit: int = 5

    def __post_init__(self) -> None:
        if isinstance(self.after, bool) or not isinstance(self.after, int) or self.after < 0:
            raise ValueError(f"ToolSearch.after must be an int >= 0, got {self.after!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"ToolSearch.limit must be an int >= 1, got {self.limit!r}")

    def defers(self, count: int) -> bool:
        """Whether a scope seeing ``count`` tools gets the one-line listing."""
        return count > self.after


_SETTINGS: weakref.WeakKeyDictionary[ToolRuntime, ToolSearch] = weakref.WeakKeyDictionary()


def enable_tool_search(runtime: ToolRuntime, *, after: int = 0, limit: int = 5) -> Callable[[], None]:
    """Turn on Code Mode tool search for ``runtime``; returns a disposer that turns it off.

    Kept beside the runtime (not in it): the core knows nothing of Code Mode. The prompt's SDK
    section and the ``run_code`` bridge both read it, so what the model is told and what the
    program can call always agree.

    >>> from toolrt import ToolRuntime
    >>> runtime = ToolRuntime()
    >>> off = enable_tool_search(runtime, after=40)
    >>> tool_search_of(runtime)
    ToolSearch(after=40, limit=5)
    >>> off(); tool_search_of(runtime) is None
    True
    """
    settings = ToolSearch(after=after, limit=limit)
    _SETTINGS[runtime] = settings
    # The prompt's SDK is cached against the runtime's state; this setting is state it cannot see.
    runtime.touch()

    def dispose() -> None:
        if _SETTINGS.get(runtime) is settings:
            del _SETTINGS[runtime]
            runtime.touch()

    return dispose


def tool_search_of(runtime: ToolRuntime) -> ToolSearch | None:
    """The tool-search settings of ``runtime``, or ``None`` when search is off."""
    return _SETTINGS.get(runtime)


def summary_line(description: object) -> str:
    """A tool's one-line summary: its description's first sentence, whitespace collapsed, at most
    :data:`MAX_SUMMARY` characters (cut on a word, marked ``…``).

    >>> summary_line("List orders. Supports paging and filters.")
    'List orders.'
    """
    if not isinstance(description, str):
        return ""
    text = " ".join(description.split())
    text = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(text) > MAX_SUMMARY:
        text = text[: MAX_SUMMARY - 1].rsplit(" ", 1)[0] + "…"
    return text


def _words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


def rank_tools(tools: Mapping[str, object], query: str) -> list[str]:
    """Names of ``tools`` (name → description) matching ``query``, best first (Okapi BM-25; ties by name).

    Tools sharing no word with the query are left out.

    >>> rank_tools({"orders_list": "List orders.", "users_get": "Get a user."}, "list the orders")
    ['orders_list']
    """
    terms = set(_words(query))
    if not terms:
        return []
    documents = {
        name: Counter(_words(name) * 2 + _words(description if isinstance(description, str) else ""))
        for name, description in tools.items()
    }
    count = len(documents)
    average = sum(sum(d.values()) for d in documents.values()) / count if count else 0.0
    frequency = {term: sum(1 for d in documents.values() if term in d) for term in terms}
    scores: list[tuple[float, str]] = []
    for name, document in documents.items():
        length = sum(document.values())
        score = 0.0
        for term in terms:
            hits = document.get(term, 0)
            if not hits:
                continue
            idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
            score += idf * hits * 2.2 / (hits + 1.2 * (0.25 + 0.75 * length / (average or 1.0)))
        if score > 0:
            scores.append((-score, name))
    scores.sort()
    return [name for _, name in scores]


def sdk_tools(definitions: Mapping[str, ToolDefinition]) -> list[SdkTool]:
    """The :class:`SdkTool` of every definition but ``run_code`` (what the SDK renderers take)."""
    return [
        SdkTool(
            name=name,
            description=definition.description,
            parameters=thaw(definition.parameters),
            output=thaw(definition.output.schema),
            group=definition.group,
        )
        for name, definition in definitions.items()
        if name != RUN_CODE_NAME
    ]


def helper_names(visible: Sequence[str] | Mapping[str, object]) -> tuple[str, ...]:
    """The search helpers a program gets: ``describe``/``search`` unless a real tool has the name."""
    return tuple(name for name in (DESCRIBE_NAME, SEARCH_NAME) if name not in visible)


def _names_argument(arguments: Any) -> list[str]:
    if isinstance(arguments, str):
        return [arguments]
    if isinstance(arguments, Mapping) and "names" in arguments:
        arguments = arguments["names"]
    if isinstance(arguments, list | tuple) and all(isinstance(name, str) for name in arguments):
        return list(arguments)
    raise ValueError('tools.describe takes a list of tool names, e.g. ["orders_list"]')


def _query_argument(arguments: Any) -> str:
    if isinstance(arguments, Mapping) and isinstance(arguments.get("query"), str):
        arguments = arguments["query"]
    if isinstance(arguments, str) and arguments.strip():
        return arguments
    raise ValueError('tools.search takes a non-empty query string, e.g. "refund orders"')


def search_bindings(
    runtime: ToolRuntime,
    agent: Hashable | None,
    render: Callable[[list[SdkTool]], str],
) -> dict[str, Callable[[Any], BindingAnswer]]:
    """The ``describe``/``search`` bindings of one ``run_code`` run ({} when search is off).

    ``render`` turns tools into the declarations text of the run's language. Both answer at once
    (no pipeline call: they read the tool set, they run nothing); bad arguments and unknown names
    fail the call with a message saying what is accepted.
    """
    settings = tool_search_of(runtime)
    if settings is None:
        return {}
    visible = runtime.visible_tools(agent)
    # Listing or not, the helpers are bound whenever search is on: a program may always ask.
    listed = {name: d for name, d in visible.items() if name != RUN_CODE_NAME}

    def answer(work: Callable[[], str]) -> BindingAnswer:
        result = BindingAnswer()
        try:
            result.set_result(work())
        except ValueError as error:
            result.set_exception(ValueError(str(error)))
        return result

    def describe(arguments: Any) -> BindingAnswer:
        def work() -> str:
            names = _names_argument(arguments)
            unknown = [name for name in names if name not in listed]
            if unknown:
                raise ValueError(f"no such tool: {', '.join(unknown)} (see the tool list in the SDK)")
            return render(sdk_tools({name: listed[name] for name in dict.fromkeys(names)}))

        return answer(work)

    def search(arguments: Any) -> BindingAnswer:
        def work() -> str:
            query = _query_argument(arguments)
            found = rank_tools({n: d.description for n, d in listed.items()}, query)[: settings.limit]
            if not found:
                return f"# no tool matches {query!r}"
            chosen = {name: listed[name] for name in sorted(found)}
            return f"# best matches: {', '.join(found)}\n" + render(sdk_tools(chosen))

        return answer(work)

    bindings = {DESCRIBE_NAME: describe, SEARCH_NAME: search}
    return {name: bindings[name] for name in helper_names(listed)}


def _code_block(section: str, fence: str) -> str:
    """The declarations inside a rendered SDK section's fenced block (the instructions dropped)."""
    start = section.index(fence) + len(fence)
    return section[start : section.rindex("\n```")]


def declarations_renderer(language: str) -> Callable[[list[SdkTool]], str]:
    """What ``describe``/``search`` answer with: the compact SDK declarations of the chosen tools,
    in the run's language, without the usage instructions the prompt already holds."""
    if language == "python":
        return lambda tools: _code_block(render_tools_sdk_py(tools, share_types=True), "```python\n")
    return lambda tools: _code_block(render_tools_sdk_ts(tools, share_types=True), "```ts\n")


def _listing(tools: Sequence[SdkTool], prefix: str) -> list[str]:
    lines = []
    for tool in sorted(tools, key=lambda t: utf16_key(t.name)):
        summary = summary_line(tool.description)
        name = js_string(tool.name) if not is_method_name(tool.name) else tool.name
        lines.append(f"{prefix}{name}: {summary}" if summary else f"{prefix}{name}")
    return lines


DEFERRED_NOTE: Final = (
    "This tool set is large, so each tool below is one line: its name and a one-line summary. "
    "Before calling a tool, get its typed signature from inside a program{how}, print it, and call "
    "the tool in your next program. Only what you print comes back."
)


def render_deferred_sdk(tools: Sequence[SdkTool], language: str, helpers: Sequence[str]) -> str:
    """The ``tools:sdk`` section when tools are deferred: the language's usage instructions, how to
    get signatures, then one line per tool (contract TS7)."""
    python = language == "python"
    show = "print(await tools.{}({}))" if python else "console.log(await tools.{}({}))"
    ways = []
    if DESCRIBE_NAME in helpers:
        ways.append("`" + show.format(DESCRIBE_NAME, '["name", ...]') + "` for named tools")
    if SEARCH_NAME in helpers:
        ways.append(
            "`" + show.format(SEARCH_NAME, '"words"') + "` for the best matches by name and description"
        )
    note = DEFERRED_NOTE.format(how=" — " + ", or ".join(ways) + " —" if ways else "")
    if python:
        members = []
        if DESCRIBE_NAME in helpers:
            members.append(f"    async def {DESCRIBE_NAME}(self, names: list[str]) -> str: ...")
        if SEARCH_NAME in helpers:
            members.append(f"    async def {SEARCH_NAME}(self, query: str) -> str: ...")
        if not members:
            members.append("    pass")
        body = "\n".join([*members, *_listing(tools, "    # ")])
        block = (
            "from typing import Any, Protocol\n\n"
            "class ToolCallError(Exception):\n    toolName: str\n\n"
            f"class Tools(Protocol):\n{body}\n    def __getattr__(self, name: str) -> Any: ...\n\n"
            "tools: Tools"
        )
        return f"{SDK_INSTRUCTIONS_PY}\n\n{note}\n\n```python\n{block}\n```"
    members = []
    if DESCRIBE_NAME in helpers:
        members.append(f"  {DESCRIBE_NAME}(names: string[]): Promise<string>;")
    if SEARCH_NAME in helpers:
        members.append(f"  {SEARCH_NAME}(query: string): Promise<string>;")
    members.append("  [name: string]: (args: any) => Promise<any>;")
    block = (
        'declare class ToolCallError extends Error {\n  readonly name: "ToolCallError";\n'
        "  readonly toolName: string;\n}\n\n"
        "declare const tools: {\n" + "\n".join(members) + "\n}\n\n" + "\n".join(_listing(tools, "// "))
    )
    return f"{SDK_INSTRUCTIONS_TS}\n\n{note}\n\n```ts\n{block}\n```"
