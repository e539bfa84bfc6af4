"""The assembled prompt and SDK are reused while the runtime's tool state is unchanged (contract
CS1-CS3), and never served stale.

What a user does: build an agent's prompt once and assemble it at every model step. Here every kind
of change a deployment makes between steps (register, unregister, reserve, restrict a scope, present
a scope as code, add a grouped tool) is made on a long-lived, connected prompt, and its assembly is
compared with the assembly of a prompt connected afresh to the same runtime, which has nothing
cached. A property test does the same over random sequences of changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from code_mode_fakes import FakeRuntime
from toolrt import Scope, ToolRuntime, define_tool, tool
from toolrt._prompt import (
    TOOL_ORDER_REST,
    Assembly,
    PresentationSection,
    PromptContext,
    SystemPrompt,
    ToolContribution,
    connect_runtime,
    presentation_prompt,
    runtime_chain,
    use_presentation_prompt,
)
from toolrt._registry import PresentationMode
from toolrt._tool_definition import ToolDefinition, ToolGroup

AGENT = "agent"
PRESET = "preset"


def echo(name: str, group: ToolGroup | None = None) -> ToolDefinition:
    definition = define_tool(
        name=name,
        description=f"Echo for {name}.",
        parameters={"value": {"type": "string", "required": True, "description": "What to echo"}},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: args["value"],
    )
    if group is None:
        return definition
    import dataclasses

    return dataclasses.replace(definition, group=group)


def connected(runtime: ToolRuntime, tool_order: Sequence[str] | None = None) -> SystemPrompt:
    prompt = SystemPrompt(tool_order, chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    prompt.section("persona", 0, "You are careful.")
    return prompt


def shape(assembly: Assembly) -> tuple[str, tuple[Any, ...], tuple[tuple[str, str], ...]]:
    return (
        assembly.render(),
        assembly.tools,
        # Empty sections aside: a prompt that once saw a grouped tool keeps an empty "tools:groups"
        # (by design, tool_groups.py), which a prompt connected later never had; both render alike.
        tuple((section.name, section.text) for section in assembly.sections if section.text),
    )


async def assert_fresh(cached: SystemPrompt, runtime: ToolRuntime, scopes: Sequence[Hashable | None]) -> None:
    """The long-lived prompt assembles exactly what a newly connected one does, for every scope."""
    fresh = connected(runtime)
    for scope in scopes:
        assert shape(await cached.assemble(scope)) == shape(await fresh.assemble(scope)), scope


def with_scopes(runtime: ToolRuntime) -> dict[Hashable, Scope]:
    """A preset scope and an agent parented to it (a scope is opened once and kept)."""
    return {PRESET: runtime.scope(PRESET), AGENT: runtime.scope(AGENT, parent=PRESET)}


@pytest.fixture
def code_runtime() -> ToolRuntime:
    runtime = ToolRuntime(code_runtime=FakeRuntime("python"))
    SCOPES_OF[id(runtime)] = with_scopes(runtime)
    return runtime


SCOPES_OF: dict[int, dict[Hashable, Scope]] = {}


def scope(runtime: ToolRuntime, key: Hashable) -> Scope:
    return SCOPES_OF[id(runtime)][key]


async def test_an_unchanged_runtime_assembles_byte_identical_prompts_with_fresh_tool_copies(
    code_runtime: ToolRuntime,
) -> None:
    """CS2: a reused projection still gives every assembly its own, mutable copies."""
    for index in range(20):
        code_runtime.register(echo(f"tool_{index}"))
    prompt = connected(code_runtime)
    first = await prompt.assemble(AGENT)
    first.tools[0]["parameters"]["properties"]["leak"] = {"type": "string"}
    first.tools[0]["description"] = "mutated"
    second = await prompt.assemble(AGENT)
    assert second.tools[0]["description"] == "Echo for tool_0."
    assert "leak" not in second.tools[0]["parameters"]["properties"]
    assert second.tools[0] is not first.tools[0]
    await assert_fresh(prompt, code_runtime, [None, AGENT, PRESET])


class CountingPresentation:
    """A presentation that counts how often the prompt asks it for its tools and SDK text."""

    def __init__(self) -> None:
        self.tool_calls = 0
        self.text_calls = 0

    def tools(self, runtime: ToolRuntime, scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        self.tool_calls += 1
        names = tuple(name for name in runtime.visible_tools(scope) if name != "run_code")
        return ToolContribution(
            schemas=[schema for schema in runtime.schemas(scope) if schema["name"] == "run_code"],
            known_names=(*names, "run_code"),
        )

    def sections(self, runtime: ToolRuntime) -> Sequence[PresentationSection]:
        def sdk(context: PromptContext) -> str:
            self.text_calls += 1
            return "SDK: " + ", ".join(
                name for name in runtime.visible_tools(context.scope) if name != "run_code"
            )

        return (PresentationSection("tools:sdk", 150, sdk),)


async def test_the_sdk_and_the_code_contribution_are_computed_once_per_generation_and_scope() -> None:
    """CS1: ten model steps on an unchanged runtime render the SDK once; a registration renders it
    again, once."""
    counting = CountingPresentation()
    previous = presentation_prompt()
    use_presentation_prompt(counting)
    try:
        runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime("python"))
        runtime.register(echo("alpha"))
        prompt = connected(runtime)
        for _ in range(10):
            assembly = await prompt.assemble(AGENT)
        assert assembly.section("tools:sdk") is not None
        assert assembly.section("tools:sdk").text == "SDK: alpha"  # type: ignore[union-attr]
        assert (counting.tool_calls, counting.text_calls) == (1, 1)
        runtime.register(echo("beta"))
        for _ in range(10):
            assembly = await prompt.assemble(AGENT)
        assert assembly.section("tools:sdk").text == "SDK: alpha, beta"  # type: ignore[union-attr]
        assert (counting.tool_calls, counting.text_calls) == (2, 2)
        await prompt.assemble(None)  # another scope is its own entry
        assert (counting.tool_calls, counting.text_calls) == (3, 3)
        # A plug-in whose own setting changes the SDK says so; the next assembly derives it again.
        runtime.touch()
        await prompt.assemble(AGENT)
        assert (counting.tool_calls, counting.text_calls) == (4, 4)
    finally:
        use_presentation_prompt(previous)


async def test_a_failing_presentation_fails_every_assembly_and_caches_nothing() -> None:
    """CS1: an SDK renderer that raises is asked again at the next assembly."""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime("cobol"))
    prompt = connected(runtime)
    for _ in range(3):
        with pytest.raises(RuntimeError, match='no SDK renderer registered for runtime language "cobol"'):
            await prompt.assemble()


async def test_register_and_unregister_reach_the_next_assembly(code_runtime: ToolRuntime) -> None:
    prompt = connected(code_runtime)
    assert (await prompt.assemble(AGENT)).tool_names == ()
    remove = code_runtime.register(echo("alpha"))
    assert (await prompt.assemble(AGENT)).tool_names == ("alpha",)
    remove()
    assert (await prompt.assemble(AGENT)).tool_names == ()
    await assert_fresh(prompt, code_runtime, [None, AGENT])


async def test_a_reservation_reaches_the_next_assemblys_known_names(code_runtime: ToolRuntime) -> None:
    """A tool_order naming a reserved (deferred) tool assembles only once the name is reserved."""
    code_runtime.register(echo("alpha"))
    prompt = connected(code_runtime, ["later", TOOL_ORDER_REST])
    with pytest.raises(ValueError, match='toolOrder lists unregistered tool "later"'):
        await prompt.assemble(AGENT)
    release = code_runtime.reserve("later")
    assert (await prompt.assemble(AGENT)).tool_names == ("alpha",)
    release()
    with pytest.raises(ValueError, match='toolOrder lists unregistered tool "later"'):
        await prompt.assemble(AGENT)


async def test_a_restriction_in_a_scope_reaches_that_scope_and_its_children_only(
    code_runtime: ToolRuntime,
) -> None:
    code_runtime.register(echo("alpha"))
    code_runtime.register(echo("beta"))
    prompt = connected(code_runtime)
    assert (await prompt.assemble(AGENT)).tool_names == ("alpha", "beta")
    lift = scope(code_runtime, PRESET).restrict(deny=["beta"])
    assert (await prompt.assemble(AGENT)).tool_names == ("alpha",)
    assert (await prompt.assemble(None)).tool_names == ("alpha", "beta")
    lift()
    assert (await prompt.assemble(AGENT)).tool_names == ("alpha", "beta")
    await assert_fresh(prompt, code_runtime, [None, AGENT, PRESET])


async def test_presenting_a_scope_as_code_swaps_its_tools_for_run_code_and_the_sdk(
    code_runtime: ToolRuntime,
) -> None:
    code_runtime.register(echo("alpha"))
    prompt = connected(code_runtime)
    native = await prompt.assemble(AGENT)
    assert native.tool_names == ("alpha",)
    assert "alpha" not in native.render()
    restore = scope(code_runtime, AGENT).present_as("code")
    code = await prompt.assemble(AGENT)
    assert code.tool_names == ("run_code",)
    assert "def alpha(" in code.render()
    assert (await prompt.assemble(None)).tool_names == ("alpha",)
    restore()
    assert shape(await prompt.assemble(AGENT)) == shape(native)
    await assert_fresh(prompt, code_runtime, [None, AGENT])


async def test_a_grouped_tool_adds_the_groups_section_at_the_next_assembly(code_runtime: ToolRuntime) -> None:
    code_runtime.register(echo("alpha"))
    prompt = connected(code_runtime)
    assert (await prompt.assemble(AGENT)).section("tools:groups") is None
    code_runtime.register(echo("cd", ToolGroup("Files", "A file system.")))
    groups = (await prompt.assemble(AGENT)).section("tools:groups")
    assert groups is not None
    assert "- Files (cd): A file system." in groups.text
    await assert_fresh(prompt, code_runtime, [None, AGENT])


async def test_changing_the_code_runtime_re_renders_the_sdk_in_its_language() -> None:
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime("python"))
    runtime.register(echo("alpha"))
    prompt = connected(runtime)
    assert "def alpha(" in (await prompt.assemble()).render()
    runtime.code_runtime = FakeRuntime("typescript")
    typescript = (await prompt.assemble()).render()
    assert "declare const tools" in typescript
    assert "alpha" in typescript
    assert "def alpha(" not in typescript
    await assert_fresh(prompt, runtime, [None])


async def test_a_provider_returning_the_same_contribution_object_is_not_read_again() -> None:
    """CS3: the same ToolContribution object means "unchanged"; a new one is read as before."""
    reads = 0

    class Schemas(list[dict[str, Any]]):
        def __iter__(self) -> Any:
            nonlocal reads
            reads += 1
            return super().__iter__()

    contribution = ToolContribution(
        Schemas([{"name": "t", "description": "d", "parameters": {"type": "object", "properties": {}}}])  # type: ignore[list-item]
    )
    prompt = SystemPrompt()
    prompt.tools(lambda _scope: contribution)
    for _ in range(5):
        assert (await prompt.assemble()).tool_names == ("t",)
    assert reads == 1
    prompt.tools(lambda _scope: ToolContribution([{"name": "u", "description": "", "parameters": {}}]))  # type: ignore[list-item]
    assert (await prompt.assemble()).tool_names == ("t", "u")
    assert reads == 1


# --- the property: cached == fresh over random sequences of changes -----------------------------

NAMES = ("alpha", "beta", "gamma", "delta")
SCOPES: tuple[Hashable | None, ...] = (None, PRESET, AGENT)

change = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(NAMES), st.sampled_from(SCOPES), st.booleans()),
    st.tuples(st.just("unregister"), st.integers(0, 7)),
    st.tuples(st.just("reserve"), st.sampled_from(("later", "soon")), st.sampled_from(SCOPES)),
    st.tuples(st.just("restrict"), st.sampled_from((PRESET, AGENT)), st.sampled_from(NAMES), st.booleans()),
    st.tuples(
        st.just("present"), st.sampled_from((PRESET, AGENT)), st.sampled_from(("native", "code", "both"))
    ),
    st.tuples(st.just("undo"), st.integers(0, 7)),
    st.tuples(st.just("language"), st.sampled_from(("python", "typescript"))),
)


def apply(
    runtime: ToolRuntime, scopes: dict[Hashable, Scope], step: tuple[Any, ...], undo: list[Any]
) -> None:
    """One change; refused ones (a name taken in that layer, a conflicting presentation) are skipped,
    as a deployment would see them raise and carry on."""
    kind = step[0]
    try:
        if kind == "register":
            _, name, scope, grouped = step
            definition = echo(name, ToolGroup("Group", "Some system.") if grouped else None)
            target = runtime if scope is None else scopes[scope]
            undo.append(target.register(definition))
        elif kind == "reserve":
            _, name, scope = step
            target = runtime if scope is None else scopes[scope]
            undo.append(target.reserve(name))
        elif kind == "restrict":
            _, scope, name, allow = step
            scoped = scopes[scope]
            undo.append(scoped.restrict(allow=[name]) if allow else scoped.restrict(deny=[name]))
        elif kind == "present":
            _, scope, mode = step
            undo.append(scopes[scope].present_as(mode))
        elif kind in ("unregister", "undo"):
            if undo:
                undo.pop(step[1] % len(undo))()
        else:
            runtime.code_runtime = FakeRuntime(step[1])
    except ValueError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(change, min_size=1, max_size=14))
def test_a_long_lived_prompt_always_assembles_what_a_fresh_one_does(steps: list[tuple[Any, ...]]) -> None:
    """CS1: after every change, the cached assembly equals a fresh one for every scope."""

    async def run() -> None:
        runtime = ToolRuntime(code_runtime=FakeRuntime("python"))
        scopes = with_scopes(runtime)
        prompt = connected(runtime)
        await assert_fresh(prompt, runtime, SCOPES)
        undo: list[Any] = []
        for step in steps:
            apply(runtime, scopes, step, undo)
            await assert_fresh(prompt, runtime, SCOPES)
            # And once more with nothing changed: the reused entries agree too.
            await assert_fresh(prompt, runtime, SCOPES)
        runtime.close()

    asyncio.run(run())


def test_tool_decorated_functions_are_cached_like_define_tool_ones() -> None:
    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    async def run() -> None:
        runtime = ToolRuntime()
        runtime.register(add)
        prompt = connected(runtime)
        first = await prompt.assemble()
        second = await prompt.assemble()
        assert first.tools == second.tools
        assert first.tools[0]["parameters"]["required"] == ["a"]
        assert first.tools[0]["parameters"] is not second.tools[0]["parameters"]

    asyncio.run(run())
