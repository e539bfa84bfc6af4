"""System-prompt assembly (ports of upstream ``system-prompt.spec.ts``, ``scoped.spec.ts``,
``tool-order.spec.ts`` and the prompt-facing cases of the tools suites)."""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Sequence
from typing import Any

import pytest

from code_mode_fakes import FakeRuntime
from helpers import echo_tool
from toolrt import AbortSignal, ToolRuntime, ToolSchema
from toolrt._prompt import (
    TOOL_ORDER_REST,
    Assembly,
    PromptContext,
    PromptError,
    Section,
    SystemPrompt,
    ToolContribution,
    connect_runtime,
    runtime_chain,
)


def schema(name: str, description: str | None = None, **parameters: Any) -> ToolSchema:
    return {
        "name": name,
        "description": name if description is None else description,
        "parameters": {"type": "object", "properties": parameters},
    }


def provide(*names: str, known: Sequence[str] | None = None) -> Any:
    """A tool provider contributing ``names`` (with ``known`` as its known names)."""
    return lambda _scope: ToolContribution([schema(name) for name in names], known)


def section_names(assembly: Assembly) -> list[str]:
    return [section.name for section in assembly.sections]


def parented(parents: dict[Hashable, Hashable]) -> Any:
    """A ``chain`` callable over a child -> parent table."""

    def chain(key: Hashable | None) -> list[Hashable]:
        keys: list[Hashable] = []
        while key is not None:
            keys.append(key)
            key = parents.get(key)
        return keys

    return chain


# --- sections ------------------------------------------------------------------------------------


async def test_sections_are_sorted_by_order_and_rendered_with_blank_lines() -> None:
    prompt = SystemPrompt()
    prompt.section("cwd", 20, "cwd: /tmp")
    prompt.section("identity", -100, "You are an agent.")
    prompt.section("rules", 10.5, "Be precise.")

    assembly = await prompt.assemble()

    assert assembly.sections == (
        Section("identity", "You are an agent."),
        Section("rules", "Be precise."),
        Section("cwd", "cwd: /tmp"),
    )
    assert assembly.render() == "You are an agent.\n\nBe precise.\n\ncwd: /tmp"


async def test_equal_orders_keep_registration_order() -> None:
    prompt = SystemPrompt()
    for name in ("zeta", "alpha", "mid"):
        prompt.section(name, 5, name)
    prompt.section("first", 1.0, "first")
    prompt.section("omega", 5.0, "omega")

    assert section_names(await prompt.assemble()) == ["first", "zeta", "alpha", "mid", "omega"]


async def test_lazy_text_is_evaluated_at_every_assembly_with_its_context() -> None:
    prompt = SystemPrompt()
    seen: list[PromptContext] = []

    def text(context: PromptContext) -> str:
        seen.append(context)
        return f"call {len(seen)} for {context.scope}"

    prompt.section("dynamic", 0, text)
    signal = AbortSignal()

    first = await prompt.assemble("alice", signal=signal)
    second = await prompt.assemble()

    assert first.sections == (Section("dynamic", "call 1 for alice"),)
    assert second.sections == (Section("dynamic", "call 2 for None"),)
    assert seen[0] == PromptContext(scope="alice", chain=("alice",), signal=signal)
    assert seen[1] == PromptContext()


async def test_empty_sections_stay_in_the_assembly_but_are_dropped_at_render() -> None:
    prompt = SystemPrompt()
    prompt.section("empty", 0, "")
    prompt.section("real", 1, "content")
    prompt.section("lazy-empty", 2, lambda _context: "")
    prompt.section("tail", 3, "tail")

    assembly = await prompt.assemble()

    assert assembly.sections == (
        Section("empty", ""),
        Section("real", "content"),
        Section("lazy-empty", ""),
        Section("tail", "tail"),
    )
    assert assembly.render() == "content\n\ntail"
    assert Assembly(sections=[Section("a", ""), Section("b", "")]).render() == ""


async def test_section_registration_errors_leak_nothing() -> None:
    prompt = SystemPrompt()
    prompt.section("dup", 0, "first")
    with pytest.raises(ValueError, match=r'prompt section "dup" is already registered \(.*scope='):
        prompt.section("dup", 1, "second")
    prompt.section("mine", 0, "a", scope="agent")
    with pytest.raises(ValueError, match='prompt section "mine" is already registered in this scope'):
        prompt.section("mine", 0, "b", scope="agent")
    for order in (math.nan, math.inf, True, "1"):
        with pytest.raises(TypeError, match='prompt section "bad" order must be a finite number'):
            prompt.section("bad", order, "x", scope="other")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a string or a callable"):
        prompt.section("bad", 0, 42, scope="other")  # type: ignore[arg-type]

    assert (await prompt.assemble()).sections == (Section("dup", "first"),)
    assert (await prompt.assemble("agent")).sections == (Section("dup", "first"), Section("mine", "a"))
    assert (await prompt.assemble("other")).sections == (Section("dup", "first"),)


async def test_a_disposer_removes_exactly_its_section() -> None:
    prompt = SystemPrompt()
    dispose = prompt.section("direct", 0, "direct section")
    prompt.section("kept", 1, "kept")
    assert section_names(await prompt.assemble()) == ["direct", "kept"]

    dispose()
    dispose()  # idempotent
    assert section_names(await prompt.assemble()) == ["kept"]
    prompt.section("direct", 2, "again")  # the name is free again
    assert section_names(await prompt.assemble()) == ["kept", "direct"]


async def test_lazy_text_must_return_a_string() -> None:
    prompt = SystemPrompt()
    prompt.section("broken", 0, lambda _context: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match='prompt section "broken" text provider returned NoneType'):
        await prompt.assemble()


# --- scoped sections -----------------------------------------------------------------------------


async def test_a_scoped_section_shadows_the_global_one_for_that_scope_only() -> None:
    prompt = SystemPrompt()
    calls: list[str] = []

    def global_text(_context: PromptContext) -> str:
        calls.append("global")
        return "You are the deployment."

    prompt.section("before", 0, "before")
    prompt.section("persona", 0, global_text)
    prompt.section("after", 0, "after")
    prompt.section("persona", 0, "You run tests.", scope="tester")

    scoped = await prompt.assemble("tester")
    assert calls == []  # a shadowed text provider is never evaluated
    # The shadow takes the shadowed section's place among equal orders.
    assert scoped.sections == (
        Section("before", "before"),
        Section("persona", "You run tests."),
        Section("after", "after"),
    )
    assert (await prompt.assemble()).render() == "before\n\nYou are the deployment.\n\nafter"
    assert (await prompt.assemble("someone-else")).section("persona") == Section(
        "persona", "You are the deployment."
    )
    assert calls == ["global", "global"]


async def test_scoped_only_sections_join_their_scope_and_leave_with_their_disposer() -> None:
    prompt = SystemPrompt()
    dispose = prompt.section("child:extra", 50, "Extra guidance.", scope="child")

    assert "Extra guidance." in (await prompt.assemble("child")).render()
    assert "Extra guidance." not in (await prompt.assemble()).render()
    dispose()
    assert (await prompt.assemble("child")).sections == ()


async def test_a_section_on_an_ancestor_scope_shadows_for_every_descendant() -> None:
    prompt = SystemPrompt(chain=parented({"agent": "preset", "sub": "agent"}))
    prompt.section("persona", 0, "global persona")
    prompt.section("persona", 0, "preset persona", scope="preset")
    prompt.section("style", 1, "global style")
    prompt.section("style", 1, "agent style", scope="agent")

    assert (await prompt.assemble("sub")).render() == "preset persona\n\nagent style"
    assert (await prompt.assemble("agent")).render() == "preset persona\n\nagent style"
    assert (await prompt.assemble("preset")).render() == "preset persona\n\nglobal style"
    assert (await prompt.assemble("sibling")).render() == "global persona\n\nglobal style"


async def test_runtime_chain_follows_the_runtime_scope_parents() -> None:
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.scope("preset")
    agent = runtime.scope("agent", parent="preset")
    runtime.scope("loner")
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    prompt.section("persona", 0, "global")
    prompt.section("persona", 0, "preset", scope="preset")

    assert (await prompt.assemble(agent)).render() == "preset"
    assert (await prompt.assemble("agent")).render() == "preset"
    assert (await prompt.assemble("loner")).render() == "global"


async def test_owner_undoes_scoped_registrations_when_the_scope_closes() -> None:
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    scope = runtime.scope("agent")
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    prompt.section("note", 0, "scoped note", scope=scope, owner=scope)
    prompt.variable("who", "agent", scope=scope, owner=scope)
    assert (await prompt.assemble("agent")).render() == "scoped note"

    scope.close()
    assembly = await prompt.assemble("agent")
    assert assembly.sections == ()
    assert dict(assembly.variables) == {}


async def test_a_chain_must_start_with_the_key() -> None:
    prompt = SystemPrompt(chain=lambda key: ["parent"])
    with pytest.raises(ValueError, match="must start with the key itself"):
        await prompt.assemble("agent")


# --- tools ---------------------------------------------------------------------------------------


async def test_tools_sort_by_utf16_code_units_whatever_the_provider_order() -> None:
    prompt = SystemPrompt()
    # U+FF5E sorts after U+1F600 in code points but before it in UTF-16 (0xFF5E > 0xD83D).
    prompt.tools(provide("b", "\uff5e", "B"))
    prompt.tools(provide("\U0001f600", "a"))

    assert (await prompt.assemble()).tool_names == ("B", "a", "b", "\U0001f600", "\uff5e")


async def test_provider_registration_order_does_not_change_the_tool_order() -> None:
    forward, backward = SystemPrompt(), SystemPrompt()
    forward.tools(provide("alpha"))
    forward.tools(provide("zulu"))
    backward.tools(provide("zulu"))
    backward.tools(provide("alpha"))

    assert (await forward.assemble()).tools == (await backward.assemble()).tools
    assert (await forward.assemble()).tool_names == ("alpha", "zulu")


async def test_a_tool_name_contributed_twice_fails_the_assembly() -> None:
    prompt = SystemPrompt()
    prompt.tools(provide("read", "bash"))
    dispose = prompt.tools(provide("bash"))
    with pytest.raises(PromptError, match='tool "bash" is contributed more than once'):
        await prompt.assemble()
    dispose()
    assert (await prompt.assemble()).tool_names == ("bash", "read")

    prompt.tools(provide("twice", "twice"))
    with pytest.raises(PromptError, match='tool "twice" is contributed more than once'):
        await prompt.assemble()


@pytest.mark.parametrize("tool_order", [None, [TOOL_ORDER_REST]])
async def test_a_provider_tool_named_like_the_rest_entry_fails(tool_order: list[str] | None) -> None:
    prompt = SystemPrompt(tool_order)
    prompt.tools(provide(TOOL_ORDER_REST))
    with pytest.raises(PromptError, match='tool provider returned reserved tool name "<unlisted-tools>"'):
        await prompt.assemble()


async def test_tool_order_places_listed_tools_and_sorts_the_rest_at_the_rest_entry() -> None:
    prompt = SystemPrompt(["todo_write", TOOL_ORDER_REST, "bash"])
    prompt.tools(provide("bash", "echo_b", "todo_write", "echo_a"))

    assert (await prompt.assemble()).tool_names == ("todo_write", "echo_a", "echo_b", "bash")


async def test_tool_order_is_a_snapshot_of_the_configured_list() -> None:
    order = ["bash", TOOL_ORDER_REST]
    prompt = SystemPrompt(order)
    order.insert(0, "ghost")
    prompt.tools(provide("read", "bash"))

    assert prompt.tool_order == ("bash", TOOL_ORDER_REST)
    assert (await prompt.assemble()).tool_names == ("bash", "read")


async def test_tool_order_naming_an_unknown_tool_rejects_every_assembly_with_the_exact_message() -> None:
    prompt = SystemPrompt(["todo_write", "ghost", TOOL_ORDER_REST])
    prompt.tools(provide("todo_write"))
    prompt.tools(provide("bash"))
    message = 'toolOrder lists unregistered tool "ghost"; known tools: bash, todo_write'
    for _ in range(2):
        with pytest.raises(PromptError) as raised:
            await prompt.assemble()
        assert str(raised.value) == message

    empty = SystemPrompt(["ghost", TOOL_ORDER_REST])
    with pytest.raises(PromptError) as raised:
        await empty.assemble()
    assert str(raised.value) == 'toolOrder lists unregistered tool "ghost"; known tools: (none)'

    plural = SystemPrompt(["ghost", TOOL_ORDER_REST, "wraith"])
    plural.tools(provide("b", "A"))
    with pytest.raises(PromptError) as raised:
        await plural.assemble()
    assert str(raised.value) == 'toolOrder lists unregistered tools "ghost", "wraith"; known tools: A, b'


async def test_a_known_but_invisible_tool_order_name_is_skipped_while_a_typo_still_fails() -> None:
    prompt = SystemPrompt(["bash", TOOL_ORDER_REST])
    prompt.tools(provide("read", known=["read", "bash"]))
    assert (await prompt.assemble()).tool_names == ("read",)

    typo = SystemPrompt(["basj", TOOL_ORDER_REST])
    typo.tools(provide("read", known=["read", "bash"]))
    with pytest.raises(PromptError) as raised:
        await typo.assemble()
    assert str(raised.value) == 'toolOrder lists unregistered tool "basj"; known tools: bash, read'


@pytest.mark.parametrize("tool_order", [[], ["bash", "todo_write"]])
def test_tool_order_without_the_rest_entry_is_rejected_at_construction(tool_order: list[str]) -> None:
    with pytest.raises(ValueError, match='toolOrder must contain the "<unlisted-tools>" rest entry'):
        SystemPrompt(tool_order)


def test_tool_order_with_two_rest_entries_or_a_repeated_name_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match='must contain exactly one "<unlisted-tools>" rest entry'):
        SystemPrompt([TOOL_ORDER_REST, "bash", TOOL_ORDER_REST])
    with pytest.raises(PromptError, match='toolOrder lists "bash" more than once'):
        SystemPrompt(["bash", "bash", TOOL_ORDER_REST])
    with pytest.raises(TypeError, match="list of tool names"):
        SystemPrompt(TOOL_ORDER_REST)
    with pytest.raises(TypeError, match="must be strings"):
        SystemPrompt([TOOL_ORDER_REST, 3])  # type: ignore[list-item]


async def test_schemas_are_projected_and_copied_for_each_assembly() -> None:
    prompt = SystemPrompt()
    source = {**schema("t", "tool", path={"type": "string"}), "output": {"type": "string"}}
    prompt.tools(lambda _scope: ToolContribution([source]))  # type: ignore[list-item]

    first = await prompt.assemble()
    assert first.tools == (schema("t", "tool", path={"type": "string"}),)
    assert list(first.tools[0]) == ["name", "description", "parameters"]
    first.tools[0]["parameters"]["properties"]["leak"] = {"type": "string"}
    first.tools[0]["description"] = "mutated"

    second = await prompt.assemble()
    assert second.tools == (schema("t", "tool", path={"type": "string"}),)
    assert source["parameters"] == {"type": "object", "properties": {"path": {"type": "string"}}}


async def test_providers_receive_the_scope_and_scoped_providers_serve_their_chain_only() -> None:
    prompt = SystemPrompt(chain=parented({"agent": "preset"}))
    seen: list[Hashable | None] = []

    def everywhere(scope: Hashable | None) -> ToolContribution:
        seen.append(scope)
        return ToolContribution([schema("global_tool")])

    prompt.tools(everywhere)
    prompt.tools(provide("preset_tool"), scope="preset")

    assert (await prompt.assemble("agent")).tool_names == ("global_tool", "preset_tool")
    assert (await prompt.assemble("other")).tool_names == ("global_tool",)
    assert (await prompt.assemble()).tool_names == ("global_tool",)
    assert seen == ["agent", "other", None]


async def test_a_provider_failure_propagates_out_of_every_assembly() -> None:
    prompt = SystemPrompt()
    prompt.section("fine", 0, "fine")

    def failing(_scope: Hashable | None) -> ToolContribution:
        raise RuntimeError('mode "code" requires a code runtime')

    prompt.tools(failing)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r'^mode "code" requires a code runtime$'):
            await prompt.assemble()


async def test_a_provider_must_return_a_tool_contribution() -> None:
    prompt = SystemPrompt()
    prompt.tools(lambda _scope: {"schemas": []})  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="must return a ToolContribution, got dict"):
        await prompt.assemble()


# --- the assemble waterfall ----------------------------------------------------------------------


async def test_a_listener_transform_is_authoritative() -> None:
    prompt = SystemPrompt()
    prompt.section("keep", 0, "keep")
    prompt.section("tools:sdk", 150, "SDK text")
    prompt.tools(provide("zulu", "run_code"))

    def strip(assembly: Assembly, _context: PromptContext, _next: Any) -> Assembly:
        return assembly.replace(
            sections=[s for s in assembly.sections if s.name != "tools:sdk"],
            tools=[*(t for t in assembly.tools if t["name"] != "run_code"), schema("aardvark")],
        )

    dispose = prompt.on_assemble(strip)
    assembly = await prompt.assemble()
    assert section_names(assembly) == ["keep"]
    assert assembly.render() == "keep"
    # Nothing re-adds run_code or re-sorts the listener's appended tool.
    assert assembly.tool_names == ("zulu", "aardvark")

    dispose()
    assert (await prompt.assemble()).tool_names == ("run_code", "zulu")


async def test_a_listener_short_circuits_by_not_calling_next() -> None:
    prompt = SystemPrompt()
    prompt.section("real", 0, "real")
    later: list[str] = []
    prompt.on_assemble(lambda assembly, context, next: Assembly())

    def never(assembly: Assembly, context: PromptContext, next: Any) -> Any:
        later.append("ran")
        return next()

    prompt.on_assemble(never)

    assembly = await prompt.assemble()
    assert assembly == Assembly()
    assert later == []


async def test_listeners_run_in_order_and_pass_a_replacement_down_the_chain() -> None:
    prompt = SystemPrompt()
    prompt.section("base", 0, "base")
    order: list[str] = []
    seen: list[list[str]] = []

    async def first(assembly: Assembly, context: PromptContext, next: Any) -> Assembly:
        order.append("first")
        result: Assembly = await next(assembly.replace(sections=[*assembly.sections, Section("a", "a")]))
        return result

    def second(assembly: Assembly, context: PromptContext, next: Any) -> Any:
        order.append("second")
        seen.append(section_names(assembly))
        return next()  # a sync listener may return next()'s awaitable

    async def outer(assembly: Assembly, context: PromptContext, next: Any) -> Assembly:
        order.append("outer")
        result: Assembly = await next()
        return result.replace(sections=[*result.sections, Section("z", "z")])

    prompt.on_assemble(first)
    prompt.on_assemble(second)
    prompt.on_assemble(outer, prepend=True)

    assembly = await prompt.assemble()
    assert order == ["outer", "first", "second"]
    assert seen == [["base", "a"]]
    assert assembly.render() == "base\n\na\n\nz"


async def test_scoped_listeners_shape_only_their_scope_and_its_descendants() -> None:
    prompt = SystemPrompt(chain=parented({"agent": "preset"}))
    shaped: list[Hashable | None] = []

    async def extra(assembly: Assembly, context: PromptContext, next: Any) -> Assembly:
        shaped.append(context.scope)
        result: Assembly = await next()
        return result.replace(sections=[*result.sections, Section("extra", "listener")])

    prompt.on_assemble(extra, scope="preset")

    assert (await prompt.assemble("agent")).render() == "listener"
    assert (await prompt.assemble("preset")).render() == "listener"
    assert (await prompt.assemble("other")).render() == ""
    assert (await prompt.assemble()).render() == ""
    assert shaped == ["agent", "preset"]


async def test_a_listener_must_return_an_assembly() -> None:
    prompt = SystemPrompt()

    async def forgetful(assembly: Assembly, context: PromptContext, next: Any) -> None:
        await next()

    prompt.on_assemble(forgetful)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="returned NoneType, expected an Assembly"):
        await prompt.assemble()


async def test_a_listener_failure_propagates() -> None:
    prompt = SystemPrompt()

    def boom(assembly: Assembly, context: PromptContext, next: Any) -> Assembly:
        raise LookupError("listener broke")

    prompt.on_assemble(boom)
    with pytest.raises(LookupError, match="listener broke"):
        await prompt.assemble()


async def test_a_complete_section_is_restored_as_the_only_section_after_the_waterfall() -> None:
    prompt = SystemPrompt()
    prompt.section("complete", 10, "Exact prompt.", complete=True)
    prompt.section("extra", 20, "extra")
    prompt.tools(provide("echo"))
    seen: list[list[str]] = []

    def meddle(assembly: Assembly, context: PromptContext, next: Any) -> Any:
        seen.append(section_names(assembly))
        return next(
            assembly.replace(
                sections=[Section("complete", "mutated"), Section("late", "late")],
                tools=[*assembly.tools, schema("added")],
            )
        )

    prompt.on_assemble(meddle)
    assembly = await prompt.assemble()

    assert seen == [["complete", "extra"]]  # listeners see every section
    assert assembly.sections == (Section("complete", "Exact prompt."),)
    assert assembly.tool_names == ("echo", "added")  # only the sections are restored


async def test_at_most_one_complete_section_may_be_in_effect() -> None:
    prompt = SystemPrompt()
    prompt.section("first", 10, "first", complete=True)
    prompt.section("second", 20, "second", complete=True)
    with pytest.raises(PromptError) as raised:
        await prompt.assemble()
    assert str(raised.value) == 'multiple complete prompt sections are active: "first", "second"'

    # A scoped, non-complete shadow takes "second" out of effect for that scope.
    prompt.section("second", 20, "scoped second", scope="agent")
    assembly = await prompt.assemble("agent")
    assert assembly.sections == (Section("first", "first"),)


# --- variables -----------------------------------------------------------------------------------


async def test_variables_interpolate_at_render_and_scoped_values_shadow_globals() -> None:
    prompt = SystemPrompt(chain=parented({"agent": "preset"}))
    prompt.section("persona", 0, "You run on {{model}} in {{cwd}}, mode {{mode}}.")
    prompt.variable("model", "deepseek-v4")
    prompt.variable("cwd", lambda context: f"/work/{context.scope}")
    prompt.variable("mode", "normal")
    prompt.variable("mode", "strict", scope="preset")

    assert (await prompt.assemble("agent")).render() == "You run on deepseek-v4 in /work/agent, mode strict."
    global_assembly = await prompt.assemble()
    assert global_assembly.render() == "You run on deepseek-v4 in /work/None, mode normal."
    assert dict(global_assembly.variables) == {"model": "deepseek-v4", "cwd": "/work/None", "mode": "normal"}


async def test_a_listener_can_add_variables_before_render() -> None:
    prompt = SystemPrompt()
    prompt.section("s", 0, "{{extra}}")
    prompt.on_assemble(
        lambda assembly, context, next: next(
            assembly.replace(variables={**assembly.variables, "extra": "from-waterfall"})
        )
    )
    assert (await prompt.assemble()).render() == "from-waterfall"


@pytest.mark.parametrize(
    ("text", "variables", "message"),
    [
        (
            "on {{modle}}",
            {"model": "m"},
            'unknown prompt variable "{{modle}}" in section "s"; registered variables: model',
        ),
        ("{{x}}", {}, 'unknown prompt variable "{{x}}" in section "s"; registered variables: (none)'),
        (
            "in {{cwd}}",
            {"cwd": None},
            'prompt variable "{{cwd}}" has no value for this assembly (section "s")',
        ),
        (
            "on {{ model }}",
            {"model": "m"},
            'malformed prompt variable reference "{{ model }}" in section "s"',
        ),
        ("{{{model}}}", {"model": "m"}, "malformed prompt variable reference at"),
        ("x {{a{b}} y {{model}}", {"model": "m"}, "malformed prompt variable reference at"),
        ("{{model\n}}", {"model": "m"}, "malformed prompt variable reference"),
    ],
)
def test_render_rejects_bad_references(text: str, variables: dict[str, str | None], message: str) -> None:
    assembly = Assembly(sections=[Section("s", text)], variables=variables)
    with pytest.raises(PromptError) as raised:
        assembly.render()
    assert str(raised.value).startswith(message)


def test_render_keeps_a_lone_opening_brace_pair_and_never_rescans_values() -> None:
    lone = Assembly(sections=[Section("s", "shell ${X:-{{fallback} stays")])
    assert lone.render() == "shell ${X:-{{fallback} stays"
    sneaky = Assembly(sections=[Section("s", "v = {{model}}!")], variables={"model": "literal {{sneaky}}"})
    assert sneaky.render() == "v = literal {{sneaky}}!"


async def test_variable_registration_is_validated() -> None:
    prompt = SystemPrompt()
    prompt.variable("model", "m1")
    with pytest.raises(ValueError, match='prompt variable "model" is already registered'):
        prompt.variable("model", "m2")
    for name in ("Not Valid", "1st", "tail\n"):
        with pytest.raises(ValueError, match="invalid prompt variable name"):
            prompt.variable(name, "x")
    prompt.variable("broken", lambda _context: 7)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match='prompt variable "broken" provider returned int'):
        await prompt.assemble()


# --- prefix-cache stability ----------------------------------------------------------------------


def wire(assembly: Assembly) -> str:
    return json.dumps(list(assembly.tools), sort_keys=False)


async def test_unchanged_registrations_assemble_byte_identically() -> None:
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(echo_tool())
    runtime.register(
        echo_tool(name="read", parameters={"path": {"type": "string"}, "limit": {"type": "number"}})
    )
    prompt = SystemPrompt(["read", TOOL_ORDER_REST], chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    prompt.tools(
        lambda _scope: ToolContribution([schema("zeta", z={"type": "string"}, a={"type": "integer"})])
    )
    prompt.section("identity", -100, "You are an agent.")
    prompt.section("tools:guide", 100, lambda _context: "Use read before echo.")
    prompt.section("empty", 50, "")
    prompt.variable("cwd", "/work")
    prompt.section("cwd", 10, "cwd: {{cwd}}")

    first = await prompt.assemble()
    second = await prompt.assemble()
    assert first.render() == second.render() == "You are an agent.\n\ncwd: /work\n\nUse read before echo."
    assert wire(first) == wire(second)
    assert first.tool_names == ("read", "echo", "zeta")

    # Registering then disposing unrelated things leaves no trace, not even in key order.
    with prompt.section("unrelated", 0, "unrelated"), prompt.tools(provide("unrelated_tool")):
        changed = await prompt.assemble()
        assert "unrelated" in changed.render()
        assert wire(changed) != wire(first)
    prompt.section("other-agent", 0, "only for someone else", scope="someone-else")
    with runtime.register(echo_tool(name="temporary")):
        pass

    third = await prompt.assemble()
    assert third.render() == first.render()
    assert wire(third) == wire(first)


# --- ToolRuntime integration ---------------------------------------------------------------------


def native_runtime() -> ToolRuntime:
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    for name in ("echo", "read", "bash"):
        runtime.register(echo_tool(name=name))
    return runtime


async def test_connect_runtime_contributes_each_scope_s_visible_tools() -> None:
    runtime = native_runtime()
    agent = runtime.scope("agent")
    agent.restrict(deny=["bash"])
    agent.register(echo_tool(name="report"))
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)

    assert list((await prompt.assemble()).tools) == sorted(runtime.schemas(), key=lambda t: t["name"])
    assert (await prompt.assemble()).tool_names == ("bash", "echo", "read")
    assert (await prompt.assemble(agent)).tool_names == ("echo", "read", "report")


async def test_tool_order_may_name_reserved_and_restricted_away_tools() -> None:
    runtime = native_runtime()
    runtime.reserve("heavy_tool")
    agent = runtime.scope("agent")
    agent.restrict(deny=["bash", "heavy_tool"])
    prompt = SystemPrompt(["heavy_tool", "bash", TOOL_ORDER_REST, "echo"], chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)

    assert (await prompt.assemble()).tool_names == ("bash", "read", "echo")
    assert (await prompt.assemble("agent")).tool_names == ("read", "echo")

    typo = SystemPrompt(["heavy_tol", TOOL_ORDER_REST], chain=runtime_chain(runtime))
    connect_runtime(typo, runtime)
    with pytest.raises(PromptError) as raised:
        await typo.assemble("agent")
    assert str(raised.value) == (
        'toolOrder lists unregistered tool "heavy_tol"; known tools: bash, echo, heavy_tool, read'
    )


async def test_a_scope_s_own_tool_is_known_to_that_scope_only() -> None:
    runtime = native_runtime()
    runtime.scope("agent").register(echo_tool(name="report"))
    prompt = SystemPrompt(["report", TOOL_ORDER_REST], chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)

    assert (await prompt.assemble("agent")).tool_names == ("report", "bash", "echo", "read")
    with pytest.raises(PromptError) as raised:
        await prompt.assemble()
    assert str(raised.value) == 'toolOrder lists unregistered tool "report"; known tools: bash, echo, read'


async def test_connect_runtime_is_undone_by_its_disposer_and_by_runtime_close() -> None:
    runtime = native_runtime()
    prompt = SystemPrompt()
    dispose = connect_runtime(prompt, runtime)
    assert (await prompt.assemble()).tool_names == ("bash", "echo", "read")
    dispose()
    assert (await prompt.assemble()).tools == ()

    # A code-mode runtime whose code runtime has no SDK renderer makes its provider fail: observable removal.
    closing = ToolRuntime(mode="code", code_runtime=FakeRuntime("cobol"))
    connect_runtime(prompt, closing)
    with pytest.raises(RuntimeError, match="no SDK renderer"):
        await prompt.assemble()
    closing.close()
    assert (await prompt.assemble()).tools == ()


async def test_non_native_scopes_fail_every_assembly_without_code_mode_wiring() -> None:
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime("cobol"))
    runtime.register(echo_tool())
    prompt = SystemPrompt()
    connect_runtime(prompt, runtime)
    for _ in range(2):
        with pytest.raises(RuntimeError, match='no SDK renderer registered for runtime language "cobol"'):
            await prompt.assemble()


async def test_the_code_mode_extension_point_supplies_non_native_contributions() -> None:
    runtime = native_runtime()
    runtime.scope("coder").present_as("both")
    calls: list[tuple[Hashable | None, str]] = []
    run_code = schema("run_code", code={"type": "string"})

    def code_mode(scope: Hashable | None, mode: str) -> ToolContribution:
        calls.append((scope, mode))
        return ToolContribution([run_code], known_names=["run_code"])

    prompt = SystemPrompt(["echo", TOOL_ORDER_REST], chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime, presented_tools=code_mode)

    assert (await prompt.assemble()).tool_names == ("echo", "bash", "read")
    with pytest.raises(PromptError) as raised:
        await prompt.assemble("coder")
    assert str(raised.value) == 'toolOrder lists unregistered tool "echo"; known tools: run_code'
    assert calls == [("coder", "both")]

    unordered = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(unordered, runtime, presented_tools=code_mode)
    assert (await unordered.assemble("coder")).tools == (run_code,)
