"""Native tool search: a large tool set stays out of the request until the model asks for it.

At 150 tools the native ``tools`` array is tens of thousands of tokens on every request, though a
task uses two or three tools. :class:`NativeToolSearch` holds such tools *deferred*: their names
are reserved in the agent's scope (known and restrictable, never visible: contract RS1/RS2), and
one small ``tool_search`` tool is visible instead. Its description lists each deferred tool as a
name and a one-line summary and says how loading works; a call returns the full schemas of the
best matches (Okapi BM-25 over name and description) and registers them in the agent's scope, so the
next model step's request carries them and they are callable — for the rest of the turn. When the
turn ends, however it ends, they are unloaded (contract RS5–RS8).

Policy is never bypassed: a deferred tool is found and loaded only when ``is_admitted`` says the
agent's scope may call it, and once loaded it is an ordinary tool of that scope, under every guard
and restriction the others are under.

::

    search = NativeToolSearch(deferred_definitions)
    agent = Agent(runtime, model)
    search.attach(agent)   # reserves the names, registers tool_search, unloads at turn end
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from toolrt._json import thaw
from toolrt._tool_definition import ToolDefinition, ToolOutput
from toolrt.codemode._tool_search import rank_tools, summary_line

if TYPE_CHECKING:
    from toolrt._events import Disposer
    from toolrt._execution import ToolRunContext
    from toolrt.loop._agent import Agent

__all__ = ["TOOL_SEARCH_NAME", "NativeToolSearch"]

TOOL_SEARCH_NAME: Final = "tool_search"

_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words describing the tool you need."},
        "names": {"type": "array", "items": {"type": "string"}, "description": "Exact tool names to load."},
    },
    "additionalProperties": False,
}
_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "loaded": {"type": "array", "items": {"type": "object"}},
        "not_found": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["loaded", "not_found"],
}


class NativeToolSearch:
    """Deferred tools for one agent, loaded on demand by its ``tool_search`` tool.

    ``limit``: how many matches one query loads. The description of ``tool_search`` is fixed
    for a given set of deferred tools (prefix-cache stable), sorted by name.
    """

    def __init__(self, definitions: Iterable[ToolDefinition], *, limit: int = 5) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"NativeToolSearch limit must be an int >= 1, got {limit!r}")
        self.definitions: dict[str, ToolDefinition] = {}
        for definition in definitions:
            if definition.name in self.definitions or definition.name == TOOL_SEARCH_NAME:
                raise ValueError(f'deferred tool "{definition.name}" is given twice or is reserved')
            self.definitions[definition.name] = definition
        self.limit = limit
        self._loaded: dict[Any, dict[str, Disposer]] = {}

    def description(self) -> str:
        """``tool_search``'s model-facing description: how loading works, then one line per tool."""
        lines = [
            f"Load tools that are not in your tool list yet. {len(self.definitions)} more tools exist; "
            "each line below is one (name: summary). Call tool_search with `names` (exact names) or "
            "a `query` (words; the best matches are loaded). It returns their full schemas, and they "
            "become callable from your next step until the end of this turn.",
        ]
        for name in sorted(self.definitions):
            summary = summary_line(self.definitions[name].description)
            lines.append(f"- {name}: {summary}" if summary else f"- {name}")
        return "\n".join(lines)

    def schema(self) -> dict[str, Any]:
        """The model-facing schema of ``tool_search`` (what one request carries instead of the
        deferred tools' schemas)."""
        return {"name": TOOL_SEARCH_NAME, "description": self.description(), "parameters": thaw(_PARAMETERS)}

    def attach(self, agent: Agent) -> Callable[[], None]:
        """Reserve every deferred name in ``agent``'s scope, register ``tool_search`` there and unload
        at each turn's end; returns a disposer undoing all of it."""
        scope = agent.scope
        disposers: list[Callable[[], None]] = [scope.reserve(name) for name in self.definitions]
        key = agent.key

        async def execute(args: Any, ctx: ToolRunContext) -> Any:
            return self.load(agent, args)

        disposers.append(
            scope.register(
                ToolDefinition(
                    name=TOOL_SEARCH_NAME,
                    description=self.description(),
                    parameters=_PARAMETERS,
                    output=ToolOutput(schema=_OUTPUT),
                    execute=execute,
                )
            )
        )
        disposers.append(agent.on_turn_end(lambda: self.unload(key)))

        def dispose() -> None:
            self.unload(key)
            for undo in reversed(disposers):
                undo()

        return dispose

    def load(self, agent: Agent, args: Any) -> dict[str, Any]:
        """Find the admitted deferred tools ``args`` names or matches and register them in the scope.

        Returns ``{"loaded": [schema, ...], "not_found": [name, ...]}``; a tool already loaded this
        turn is returned again (its schema) without registering twice. Raises ``ValueError`` for
        arguments that name no query and no names.
        """
        query = args.get("query") if isinstance(args, dict) else None
        names = args.get("names") if isinstance(args, dict) else None
        if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise ValueError('tool_search "names" must be a list of tool names')
        if not (isinstance(query, str) and query.strip()) and not names:
            raise ValueError('tool_search needs a "query" (words) or "names" (exact tool names)')
        admitted = {n: d for n, d in self.definitions.items() if agent.runtime.is_admitted(n, agent.key)}
        chosen: list[str] = []
        missing: list[str] = []
        for name in names or ():
            (chosen if name in admitted else missing).append(name)
        if isinstance(query, str) and query.strip():
            ranked = rank_tools({n: d.description for n, d in admitted.items()}, query)
            chosen += [name for name in ranked[: self.limit] if name not in chosen]
        loaded = self._loaded.setdefault(agent.key, {})
        for name in chosen:
            if name not in loaded:
                loaded[name] = agent.scope.register(admitted[name])
        return {"loaded": [self._schema(name) for name in chosen], "not_found": missing}

    def _schema(self, name: str) -> dict[str, Any]:
        definition = self.definitions[name]
        return {
            "name": name,
            "description": definition.description,
            "parameters": thaw(definition.parameters),
        }

    def unload(self, key: Any) -> None:
        """Unregister every tool loaded for ``key``'s scope (the end of a turn)."""
        for dispose in reversed(list(self._loaded.pop(key, {}).values())):
            dispose()

    def loaded(self, key: Any) -> Sequence[str]:
        """The names loaded for ``key``'s scope in the current turn."""
        return tuple(self._loaded.get(key, ()))
