"""Scopes: scoped layers, restrict(), guards, scoped listeners and per-scope presentation.

Port of upstream ``scoped.spec.ts`` (contract §2.2 R1/R4/R5/R7, §2.4 RX1–RX5, §2.5 G1–G3, §2.7 P2/P3 and
C1–C4, §2.9 A3, §3.2 items 20–23 and the runtime-free parts of 33). Upstream ``agent.ctx`` is
``runtime.scope(agent)`` here (decision 0001); "disposing the fiber" is ``scope.close()``.
Upstream titles are quoted in each docstring.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import inspect
import logging
from collections.abc import Hashable
from typing import Any

import pytest

from code_mode_fakes import FakeRuntime
from helpers import raw_tool, string_tool, text
from toolrt import AbortSignal, Accept, Allow, Deny, ToolExecutionInput, ToolFailure, ToolRuntime, ToolSuccess
from toolrt.lowlevel import ExecutionToken, ToolErrorInfo, ToolExecution

ARGS_NOT_LOSSLESS = "tool execution arguments must be losslessly JSON-serializable"
RESTRICT_UNSCOPED = (
    "tools.restrict() requires a scoped context (runtime.scope(agent)): a context-global restriction "
    "would mask every agent — deny the tool for the intended agent instead"
)
RESTRICT_EMPTY = (
    "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost always a "
    "materialized-empty-config bug)"
)
RESTRICT_RUN_CODE = (
    'tools.restrict() cannot name reserved Code Mode presentation transport "run_code"; restrict '
    "end-capability tools instead"
)
OBSERVER_FAILED = 'tool "{}" ({}): tools/result observer failed: {}'


# --- local helpers ---------------------------------------------------------------------------------


class Counter:
    """Counts tool body invocations."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    @property
    def count(self) -> int:
        return len(self.calls)


def counted_runtime() -> tuple[ToolRuntime, Counter]:
    """A runtime with the global tool ``t`` and the :class:`Counter` of its body's calls."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    body = Counter()
    runtime.register(raw_tool("t", counter=body))
    return runtime, body


def agent_scope_over(*tool_names: str, agent: str = "agent") -> tuple[ToolRuntime, Any]:
    """A runtime with a :func:`raw_tool` per name registered globally, and the scope of ``agent``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    for name in tool_names:
        runtime.register(raw_tool(name))
    return runtime, runtime.scope(agent)


def preset_chain() -> tuple[ToolRuntime, Any, Any]:
    """A runtime with the global tool ``t``, a ``preset`` scope and its ``child`` scope."""
    runtime, preset = agent_scope_over("t", agent="preset")
    return runtime, preset, runtime.scope("child", parent=preset)


def names(schemas: list[Any]) -> list[str]:
    return [schema["name"] for schema in schemas]


def call_input(name: str, arguments: Any = None, **fields: Any) -> ToolExecutionInput:
    fields.setdefault("signal", AbortSignal())
    return ToolExecutionInput(
        call_id=fields.pop("call_id", "c1"),
        name=name,
        arguments={} if arguments is None else arguments,
        **fields,
    )


def result_text(result: Any) -> str:
    [block] = result.content
    return str(block["text"])


def assert_unknown_tool(result: Any, name: str) -> None:
    assert isinstance(result, ToolFailure)
    assert result.content == text(f'Error: unknown tool "{name}"')
    assert result.error.message == f'unknown tool "{name}"'
    assert result.error.info == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")


class PhaseCounter:
    """Counts every pipeline phase of one runtime (global listeners, a guard, and tools/result)."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.pre = 0
        self.around = 0
        self.post = 0
        self.guard = 0
        self.results: list[tuple[ToolExecution, Any]] = []

        async def pre(execution: ToolExecution, next: Any) -> Any:
            self.pre += 1
            return await next()

        async def around(execution: ToolExecution, next: Any) -> Any:
            self.around += 1
            return await next()

        async def post(execution: ToolExecution, result: Any, next: Any) -> Any:
            self.post += 1
            return await next()

        def guard(execution: ToolExecution) -> None:
            self.guard += 1

        runtime.on("tools/pre-execute", pre)
        runtime.on("tools/execute", around)
        runtime.on("tools/post-execute", post)
        runtime.on("tools/result", lambda execution, result: self.results.append((execution, result)))
        runtime.guard(guard)

    def policy(self) -> tuple[int, int, int, int]:
        return self.pre, self.guard, self.around, self.post


# --- describe: scoped tool registration ------------------------------------------------------------


async def test_keeps_final_result_observers_synchronous() -> None:
    """keeps final-result observers synchronous: ``finish`` publishes before it returns."""
    runtime, scope = agent_scope_over("t")
    seen: list[Any] = []
    runtime.on("tools/result", lambda execution, result: seen.append(("global", result)))
    scope.on("tools/result", lambda execution, result: seen.append(("scoped", result)))

    execution, early = runtime.stages.create(call_input("t", agent="agent"))
    assert early is None
    kind, _ = await runtime.stages.prepare(execution)
    assert kind == "dispatch"
    _, dispatched = await runtime.stages.dispatch(execution)
    assert not inspect.iscoroutinefunction(runtime.stages.finish)
    result = runtime.stages.finish(execution, dispatched)

    assert [label for label, _ in seen] == ["global", "scoped"]
    assert all(observed is result for _, observed in seen)
    assert execution.frozen


async def test_files_a_scoped_tool_in_its_layer_visible_and_executable_for_that_scope_only() -> None:
    """files a scoped tool in its layer: visible/executable for that scope only (§3.2 item 20)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("shared"))
    scope = runtime.scope("a")
    runtime.scope("b")
    scope.register(raw_tool("mine"))

    assert names(runtime.schemas(scope)) == ["shared", "mine"]
    assert names(scope.schemas()) == ["shared", "mine"]
    assert names(runtime.schemas()) == ["shared"]
    assert names(runtime.schemas("b")) == ["shared"]
    assert names(runtime.schemas("never-opened")) == ["shared"]

    assert (await runtime.call("mine", agent="a")).value == "ran:mine"
    assert (await runtime.call("mine", agent=scope)).value == "ran:mine"
    assert_unknown_tool(await runtime.call("mine", agent="b"), "mine")
    assert_unknown_tool(await runtime.call("mine"), "mine")


@pytest.mark.parametrize("scoped_first", [False, True], ids=["global-first", "scoped-first"])
async def test_scoped_shadows_global_on_a_name_conflict_in_either_registration_order(
    scoped_first: bool,
) -> None:
    """scoped shadows global on a name conflict, in either registration order."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("read"))
    scope = runtime.scope("a")
    if scoped_first:
        scope.register(raw_tool("bash", "restricted-bash"))
        runtime.register(raw_tool("bash", "global-bash"))
    else:
        runtime.register(raw_tool("bash", "global-bash"))
        scope.register(raw_tool("bash", "restricted-bash"))
    runtime.register(raw_tool("web"))

    assert names(runtime.schemas(scope)).count("bash") == 1
    assert (await runtime.call("bash", agent="a")).value == "restricted-bash"
    assert (await runtime.call("bash")).value == "global-bash"
    assert (await runtime.call("bash", agent="other")).value == "global-bash"


def test_a_scoped_shadow_keeps_the_inherited_position() -> None:
    """R4 step 4 / R6: an own tool overriding an inherited name keeps the inherited map position."""
    _runtime, scope = agent_scope_over("a", "b", "c")
    scope.register(raw_tool("z"))
    shadow = raw_tool("b", "shadow")
    scope.register(shadow)

    assert names(scope.schemas()) == ["a", "b", "c", "z"]
    assert scope.get("b") is shadow


def test_rejects_a_duplicate_name_within_one_layer_naming_the_scope_api_for_the_global_case() -> None:
    """rejects a duplicate name within one layer, naming agent.ctx for the global case."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("dup"))
    with pytest.raises(ValueError) as raised:
        runtime.register(raw_tool("dup"))
    assert "`runtime.scope(agent)`" in str(raised.value)
    assert str(raised.value).startswith('tool "dup" is already registered (for a per-agent variant')

    scope = runtime.scope("a")
    scope.register(raw_tool("dup"))  # a scoped layer may shadow the global one
    with pytest.raises(ValueError) as raised:
        scope.register(raw_tool("dup"))
    assert str(raised.value) == 'tool "dup" is already registered in this scope'


async def test_disposing_the_scope_unwinds_its_registrations_and_leaves_no_residue() -> None:
    """disposing the scope unwinds its registrations and leaves no residue."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("shared"))
    runtime.register(raw_tool("bash"))
    scope = runtime.scope("a")
    seen: list[str] = []
    scope.register(raw_tool("mine"))
    scope.register(raw_tool("shared", "shadowed"))
    scope.reserve("deferred")
    scope.restrict(deny=["bash"])
    scope.guard(lambda execution: "scoped guard")
    scope.present_as("code")
    scope.on("tools/result", lambda execution, result: seen.append(execution.name))
    assert runtime.mode_for("a") == "code"

    scope.close()
    scope.close()  # idempotent

    assert names(runtime.schemas("a")) == ["shared", "bash"]
    assert runtime.mode_for("a") == "native"
    assert runtime.is_admitted("bash", "a") is True
    assert (await runtime.call("shared", agent="a")).value == "ran:shared"
    assert (await runtime.call("bash", agent="a")).value == "ran:bash"
    assert_unknown_tool(await runtime.call("mine", agent="a"), "mine")
    assert seen == []

    reopened = runtime.scope("a")  # the key is free again, with an empty layer
    with pytest.raises(ValueError, match='unknown global tool "deferred"'):
        reopened.restrict(deny=["deferred"])
    reopened.present_as("both")
    reopened.register(raw_tool("mine"))


def test_scope_methods_refuse_after_close_and_the_scope_is_a_context_manager() -> None:
    """R1 (Python shape): ``with runtime.scope(...)`` closes it; a closed scope refuses registrations."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with runtime.scope("a") as scope:
        scope.register(raw_tool("mine"))
        with pytest.raises(ValueError, match="already open"):
            runtime.scope("a")
    assert runtime.get("mine", "a") is None
    for method, argument in (
        (scope.register, raw_tool("late")),
        (scope.reserve, "late"),
        (scope.guard, lambda execution: None),
        (scope.present_as, "code"),
    ):
        with pytest.raises(RuntimeError, match="closed"):
            method(argument)
    with pytest.raises(RuntimeError, match="closed"):
        scope.restrict(deny=["x"])
    with pytest.raises(RuntimeError, match="closed"):
        scope.on("tools/result", lambda execution, result: None)


async def test_lifting_one_registration_never_reclaims_a_layer_that_still_holds_others() -> None:
    """R1: only an *emptied* scoped layer is reclaimed; lifting one entry keeps the rest in force."""
    runtime, scope = agent_scope_over("t", "web", agent="a")
    lift = scope.restrict(deny=["web"])
    scope.guard(lambda execution: "still guarded")
    unreserve = scope.reserve("deferred")
    scope.present_as("code")
    scope.restrict(deny=["deferred"])

    lift()
    unreserve()

    assert runtime.mode_for("a") == "code"
    assert scope.is_admitted("deferred") is False
    nested = await runtime.call("t", agent="a", parent=ExecutionToken())
    assert nested.error.message == "still guarded"


def test_a_scope_has_one_parent_and_the_chain_cannot_form_a_cycle() -> None:
    """§1.2 dsh-scope ``bindScopeParent``: one parent, cycle-checked; a refused open leaves no scope."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(ValueError, match="own parent"):
        runtime.scope("self", parent="self")
    runtime.scope("a", parent="b")
    runtime.scope("c", parent="a")
    with pytest.raises(ValueError, match="cycle"):
        runtime.scope("b", parent="c")
    with pytest.raises(ValueError, match="cannot be None"):
        runtime.scope(None)

    parent = runtime.scope("b")  # the refused key is still free
    runtime.scope("self")
    parent.restrict(allow=[])
    parent.register(raw_tool("own"))
    assert names(runtime.schemas("c")) == []  # b's mask reaches c through a


async def test_disposers_of_a_closed_scope_are_harmless() -> None:
    """R1: every disposer is idempotent, also after its scope closed it."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    scope = runtime.scope("a")
    dispose = scope.register(raw_tool("mine"))
    scope.close()
    assert dispose.disposed
    dispose()
    again = runtime.scope("a")
    again.register(raw_tool("mine"))
    dispose()
    assert (await runtime.call("mine", agent="a")).value == "ran:mine"


# --- describe: restrict() --------------------------------------------------------------------------


async def test_restrict_masks_globals_merges_local_tools_and_keeps_schemas_with_execution() -> None:
    """restrict() › masks global tools, merges scope-local tools afterward, and keeps assembly with
    execution (§3.2 item 21). Assembly is represented by ``schemas()``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("read"))
    runtime.register(raw_tool("bash"))
    scope = runtime.scope("a")
    scope.register(raw_tool("capture"))
    scope.restrict(allow=["read"])

    assert names(scope.schemas()) == ["read", "capture"]
    assert runtime.get("bash", scope) is None
    assert_unknown_tool(await runtime.call("bash", agent="a"), "bash")
    for name in names(scope.schemas()):
        assert (await runtime.call(name, agent="a")).value == f"ran:{name}"
    assert names(runtime.schemas()) == ["read", "bash"]
    assert (await runtime.call("bash")).value == "ran:bash"


async def test_restrict_applies_snapshotted_filters_to_the_live_global_registry() -> None:
    """restrict() › applies snapshotted filters to the live global registry before merging later
    scope-local tools."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("read"))
    runtime.register(raw_tool("bash"))
    denying = runtime.scope("deny-bash")
    allowing = runtime.scope("allow-read")
    denying.restrict(deny=["bash"])
    allowing.restrict(allow=["read"])

    runtime.register(raw_tool("web"))
    allowing.register(raw_tool("local"))

    assert names(denying.schemas()) == ["read", "web"]
    assert names(allowing.schemas()) == ["read", "local"]
    assert (await runtime.call("web", agent="deny-bash")).value == "ran:web"
    assert_unknown_tool(await runtime.call("web", agent="allow-read"), "web")
    assert (await runtime.call("local", agent="allow-read")).value == "ran:local"


def test_restrict_composes_multiple_restrictions_by_intersection_and_lifts_each_independently() -> None:
    """restrict() › composes multiple restrictions by intersection and lifts each independently."""
    _runtime, scope = agent_scope_over("a", "b", "c")
    lift_allow = scope.restrict(allow=["a", "b"])
    lift_deny = scope.restrict(deny=["b"])
    assert names(scope.schemas()) == ["a"]

    lift_allow()
    assert names(scope.schemas()) == ["a", "c"]
    lift_deny()
    assert names(scope.schemas()) == ["a", "b", "c"]


def test_restrict_compiles_the_filter_values_at_registration() -> None:
    """restrict() › compiles the readonly filter values at registration."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    for name in ("read", "bash", "web"):
        runtime.register(raw_tool(name))
    scope = runtime.scope("agent")
    deny = ["bash"]
    allow = ["read", "bash"]
    scope.restrict(deny=deny, allow=allow)
    deny.append("read")
    deny.remove("bash")
    allow.append("web")

    assert names(scope.schemas()) == ["read"]


def test_an_empty_allow_list_hides_every_inherited_tool_but_not_own_tools() -> None:
    """RX2: an empty array is a valid filter — ``allow=[]`` hides every inherited tool."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("read"))
    scope = runtime.scope("agent")
    scope.register(raw_tool("own"))
    scope.restrict(allow=[])

    assert names(scope.schemas()) == ["own"]


def test_restrict_fails_loud_on_an_unscoped_call_an_empty_filter_and_names_it_does_not_inherit() -> None:
    """restrict() › fails loud on an unscoped call, an empty filter, and names it does not inherit."""
    empty = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(ValueError) as raised:
        empty.scope("agent").restrict(allow=["ghost"])
    assert str(raised.value) == (
        'tools.restrict() names unknown global tool "ghost"; known global tools: (none)'
    )

    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("real"))
    scope = runtime.scope("agent")
    scope.register(raw_tool("local"))

    with pytest.raises(ValueError) as raised:
        runtime.restrict(deny=["real"])
    assert str(raised.value) == RESTRICT_UNSCOPED
    with pytest.raises(ValueError) as raised:
        scope.restrict()
    assert str(raised.value) == RESTRICT_EMPTY
    with pytest.raises(ValueError) as raised:
        scope.restrict(allow=None, deny=None)
    assert str(raised.value) == RESTRICT_EMPTY
    with pytest.raises(ValueError) as raised:
        scope.restrict(deny=["local"])  # a scope's own tool is not inherited
    assert str(raised.value) == (
        'tools.restrict() names unknown global tool "local"; known global tools: real'
    )
    with pytest.raises(ValueError) as raised:
        scope.restrict(allow=["reall"])
    assert str(raised.value) == (
        'tools.restrict() names unknown global tool "reall"; known global tools: real'
    )
    with pytest.raises(ValueError) as raised:
        scope.restrict(allow=["real"], deny=["ghost", "wraith"])
    assert str(raised.value) == (
        'tools.restrict() names unknown global tools "ghost", "wraith"; known global tools: real'
    )
    assert names(scope.schemas()) == ["real", "local"]  # failed calls left no restriction behind


@pytest.mark.parametrize("field", ["allow", "deny"])
def test_restrict_rejects_the_run_code_transport_before_unknown_names(field: str) -> None:
    """RX3: naming ``run_code`` is refused (checked before unknown names), in every mode."""
    for mode in ("native", "code", "both"):
        runtime = ToolRuntime(mode=mode, code_runtime=FakeRuntime())  # type: ignore[arg-type]
        runtime.register(raw_tool("real"))
        scope = runtime.scope("agent")
        with pytest.raises(ValueError) as raised:
            scope.restrict(**{field: ["ghost", "run_code"]})
        assert str(raised.value) == RESTRICT_RUN_CODE


def test_restrict_refuses_a_bare_string_or_non_string_names() -> None:
    """Python-specific: ``allow="read"`` would silently mean the characters r/e/a/d; it is refused."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("read"))
    scope = runtime.scope("agent")
    with pytest.raises(TypeError, match="not a string"):
        scope.restrict(allow="read")
    with pytest.raises(TypeError, match="must be strings"):
        scope.restrict(deny=[1])  # type: ignore[list-item]
    assert names(scope.schemas()) == ["read"]


async def test_a_scope_object_and_its_key_name_the_same_agent() -> None:
    """Decision 0001: a ``Scope`` hashes and compares equal to its key (``agent=scope`` ≡ ``agent=key``)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    scope = runtime.scope("a")
    scope.register(raw_tool("mine"))
    seen: list[Any] = []
    scope.on("tools/result", lambda execution, result: seen.append(execution.agent))

    direct = await runtime.execute(call_input("mine", agent=scope))
    by_key = await runtime.execute(call_input("mine", agent="a"))

    assert direct.value == by_key.value == "ran:mine"
    assert scope == "a"
    assert hash(scope) == hash("a")
    assert seen == ["a", "a"]


# --- describe: restrict() over an inherited scope layer --------------------------------------------


async def test_filters_tools_the_child_inherits_from_an_ancestor_scope() -> None:
    """restrict() over an inherited scope layer › filters tools the child inherits from an ancestor
    scope, not only global ones."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    parent = runtime.scope("parent")
    child = runtime.scope("child", parent=parent)
    parent.register(raw_tool("bash"))
    parent.register(raw_tool("read"))
    child.restrict(deny=["bash"])

    assert names(child.schemas()) == ["read"]
    assert_unknown_tool(await runtime.call("bash", agent="child"), "bash")
    assert names(parent.schemas()) == ["bash", "read"]
    assert (await runtime.call("bash", agent="parent")).value == "ran:bash"


def test_keeps_the_childs_own_registrations_outside_its_own_filter() -> None:
    """restrict() over an inherited scope layer › keeps the child's own registrations outside its own
    filter."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("read"))
    runtime.register(raw_tool("bash"))
    parent = runtime.scope("parent")
    child = runtime.scope("child", parent=parent)
    child.register(raw_tool("report"))
    child.restrict(allow=["read"])

    assert names(child.schemas()) == ["read", "report"]


async def test_lets_an_ancestors_restriction_reach_every_scope_nested_inside_it() -> None:
    """restrict() over an inherited scope layer › lets an ancestor's restriction reach every scope
    nested inside it."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("web"))
    runtime.register(raw_tool("read"))
    parent = runtime.scope("parent")
    child = runtime.scope("child", parent=parent)
    grandchild = runtime.scope("grandchild", parent=child)
    parent.restrict(deny=["web"])

    for scope in (parent, child, grandchild):
        assert names(scope.schemas()) == ["read"]
    assert_unknown_tool(await runtime.call("web", agent="grandchild"), "web")
    assert names(runtime.scope("unrelated").schemas()) == ["web", "read"]


def test_a_nearer_ancestor_definition_replaces_a_farther_one_in_place() -> None:
    """R4 step 2: a nearer layer replaces the definition but keeps the earlier map position."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("x", "global-x"))
    runtime.register(raw_tool("y"))
    parent = runtime.scope("parent")
    child = runtime.scope("child", parent=parent)
    parent_x = raw_tool("x", "parent-x")
    parent.register(parent_x)
    parent.register(raw_tool("z"))

    assert names(child.schemas()) == ["x", "y", "z"]
    assert child.get("x") is parent_x
    child.restrict(deny=["x"])  # an ancestor-registered name is restrictable for the child
    assert names(child.schemas()) == ["y", "z"]


# --- describe: scoped execution dispatch ------------------------------------------------------------


async def test_a_scoped_pre_execute_listener_gates_only_its_own_agent_never_agent_less_calls() -> None:
    """scoped execution dispatch › an agent.ctx pre-execute listener gates only its own agent (and never
    subject-less calls) (A3). Its descendants are gated too (§4.1 #3)."""
    runtime, body = counted_runtime()
    gated = runtime.scope("gated")
    runtime.scope("child", parent=gated)
    runtime.scope("other")
    seen: list[Hashable] = []

    def deny(execution: ToolExecution, next: Any) -> Deny:
        seen.append(execution.agent)
        return Deny(f"gated for {execution.agent}")

    gated.on("tools/pre-execute", deny)

    assert (await runtime.call("t", agent="gated")).error.message == "gated for gated"
    assert (await runtime.call("t", agent="child")).error.message == "gated for child"
    assert (await runtime.call("t", agent="other")).value == "ran:t"
    assert (await runtime.call("t")).value == "ran:t"
    assert seen == ["gated", "child"]
    assert body.count == 2


async def test_scoped_tools_result_observers_see_only_their_agents_calls() -> None:
    """E24: ``tools/result`` reaches untagged observers plus those on the agent's scope chain."""
    runtime, preset, _child = preset_chain()
    other = runtime.scope("other")
    scoped: list[Hashable] = []
    others: list[Hashable] = []
    everything: list[Hashable] = []
    preset.on("tools/result", lambda execution, result: scoped.append(execution.agent))
    other.on("tools/result", lambda execution, result: others.append(execution.agent))
    runtime.on("tools/result", lambda execution, result: everything.append(execution.agent))

    for agent in ("preset", "child", "other", None, "never-opened"):
        await runtime.call("t", agent=agent)

    assert scoped == ["preset", "child"]
    assert others == ["other"]
    assert everything == ["preset", "child", "other", None, "never-opened"]


async def test_scoped_execute_and_post_execute_listeners_follow_the_scope_chain() -> None:
    """§4.1 #3: scoped ``tools/execute`` and ``tools/post-execute`` listeners follow the chain too."""
    runtime, preset, _child = preset_chain()
    seen: list[tuple[str, Hashable]] = []

    async def around(execution: ToolExecution, next: Any) -> Any:
        seen.append(("execute", execution.agent))
        return await next()

    async def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        seen.append(("post", execution.agent))
        return await next()

    preset.on("tools/execute", around)
    preset.on("tools/post-execute", post)

    for agent in ("child", "other", None):
        await runtime.call("t", agent=agent)
    assert seen == [("execute", "child"), ("post", "child")]


async def test_applies_scoped_guards_after_pre_execute_and_unwinds_duplicates_independently() -> None:
    """scoped execution dispatch › applies scoped guards after pre-execute and unwinds duplicate
    registrations independently (§3.2 item 22)."""
    runtime, body = counted_runtime()
    scope = runtime.scope("a")

    def terminal(execution: ToolExecution) -> str:
        return "terminal policy"

    lift_first = scope.guard(terminal)
    scope.guard(terminal)  # the same function twice = two independent entries
    scope.on("tools/pre-execute", lambda execution, next: Allow(), prepend=True)

    denied = await runtime.call("t", agent="a")
    assert denied.content == text("Error: terminal policy")
    assert denied.error.message == "terminal policy"
    assert denied.error.info is None
    assert (await runtime.call("t", agent="b")).value == "ran:t"
    assert (await runtime.call("t")).value == "ran:t"

    lift_first()
    assert (await runtime.call("t", agent="a")).error.message == "terminal policy"

    scope.close()
    assert (await runtime.call("t", agent="a")).value == "ran:t"
    assert body.count == 3


async def test_composes_global_guards_monotonically_when_one_abstains_and_a_later_one_denies() -> None:
    """scoped execution dispatch › composes global guards monotonically when one abstains and a later
    one denies."""
    runtime, body = counted_runtime()
    calls: list[str] = []

    def abstain(execution: ToolExecution) -> None:
        calls.append("abstain")

    def deny(execution: ToolExecution) -> str:
        calls.append("deny")
        return "global denial"

    def never(execution: ToolExecution) -> str:
        calls.append("never")
        return "unreachable"

    runtime.guard(abstain)
    runtime.guard(deny)
    runtime.guard(never)

    result = await runtime.call("t")
    assert result.content == text("Error: global denial")
    assert result.error.message == "global denial"
    assert calls == ["abstain", "deny"]
    assert body.count == 0


async def test_guards_run_global_first_then_the_agent_chain_farthest_first() -> None:
    """G2: global guards in registration order, then the chain's layers farthest ancestor first."""
    runtime, preset, child = preset_chain()
    order: list[str] = []

    def recorder(label: str) -> Any:
        def guard(execution: ToolExecution) -> None:
            order.append(label)

        return guard

    child.guard(recorder("child-1"))
    preset.guard(recorder("preset"))
    runtime.guard(recorder("global-1"))
    child.guard(recorder("child-2"))
    runtime.guard(recorder("global-2"))

    assert (await runtime.call("t", agent="child")).value == "ran:t"
    assert order == ["global-1", "global-2", "preset", "child-1", "child-2"]
    order.clear()
    await runtime.call("t")
    assert order == ["global-1", "global-2"]


async def test_guards_see_the_execution_and_run_only_after_an_allow() -> None:
    """G2/G3: guards run only when pre-execute allows; a guard denial still reaches post-execute."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("t"))
    guarded: list[Any] = []
    post_seen: list[Any] = []

    def guard(execution: ToolExecution) -> str | None:
        guarded.append((execution.name, execution.call_id, execution.arguments))
        return "guard says no" if execution.arguments.get("deny") else None

    async def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        post_seen.append(result.error.message if result.is_error else result.value)
        return await next()

    runtime.guard(guard)
    runtime.on("tools/post-execute", post)
    remove = runtime.on(
        "tools/pre-execute",
        lambda execution, next: Deny("pre denied") if execution.arguments.get("pre") else next(),
    )

    assert (await runtime.call("t", {"pre": True}, call_id="c0")).error.message == "pre denied"
    assert guarded == []
    assert (await runtime.call("t", {"deny": True}, call_id="c1")).error.message == "guard says no"
    assert guarded == [("t", "c1", {"deny": True})]
    remove()
    assert (await runtime.call("t", call_id="c2")).value == "ran:t"
    assert post_seen == ["pre denied", "guard says no", "ran:t"]


async def test_a_throwing_guard_is_a_final_error_that_skips_post_execute() -> None:
    """G3: a throwing guard → final error result (skips post-execute)."""
    runtime, body = counted_runtime()
    post = Counter()

    def explode(execution: ToolExecution) -> str:
        raise RuntimeError("guard exploded")

    async def post_listener(execution: ToolExecution, result: Any, next: Any) -> Any:
        post.calls.append(result)
        return await next()

    runtime.guard(explode)
    runtime.on("tools/post-execute", post_listener)

    result = await runtime.call("t")
    assert result.content == text("Error: guard exploded")
    assert result.error.info is None
    assert post.count == 0
    assert body.count == 0


@pytest.mark.parametrize("verdict", [False, True, 0, ["no"]], ids=repr)
async def test_a_guard_returning_neither_none_nor_a_string_is_a_failed_call(verdict: Any) -> None:
    """Decision 0001: guards must return ``None`` or a ``str``; anything else fails the call."""
    runtime, body = counted_runtime()
    runtime.guard(lambda execution: verdict)

    result = await runtime.call("t")
    assert isinstance(result, ToolFailure)
    assert result.error.message.startswith("a tool guard must return a denial reason (str) or None")
    assert body.count == 0


async def test_live_iterates_a_guard_registered_by_an_earlier_guard() -> None:
    """scoped execution dispatch › live-iterates a guard registered by an earlier guard."""
    runtime, body = counted_runtime()
    calls: list[str] = []

    def late(execution: ToolExecution) -> str:
        calls.append("late")
        return "late denial"

    def first(execution: ToolExecution) -> None:
        calls.append("first")
        if "late" not in calls:
            runtime.guard(late)

    runtime.guard(first)

    result = await runtime.call("t")
    assert result.content == text("Error: late denial")
    assert calls == ["first", "late"]
    assert body.count == 0


async def test_defers_a_scoped_guard_that_replaces_the_last_guard_in_its_generation() -> None:
    """scoped execution dispatch › defers a scoped guard that replaces the last guard in its
    generation (G2: lift then add takes effect on the next call only)."""
    runtime, body = counted_runtime()
    scope = runtime.scope("a")
    calls: list[str] = []

    def replacement(execution: ToolExecution) -> str:
        calls.append("replacement")
        return "replacement denial"

    def original(execution: ToolExecution) -> None:
        calls.append("original")
        lift()
        scope.guard(replacement)

    lift = scope.guard(original)

    assert (await runtime.call("t", agent="a")).value == "ran:t"
    assert calls == ["original"]
    assert (await runtime.call("t", agent="a")).error.message == "replacement denial"
    assert calls == ["original", "replacement"]
    assert body.count == 1


async def test_shares_one_token_and_materialized_argument_value_across_the_pipeline() -> None:
    """scoped execution dispatch › shares one token and materialized argument value across the
    pipeline."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    scope = runtime.scope("a")
    tokens: list[Any] = []
    argument_views: list[Any] = []

    async def execute(args: Any, ctx: Any) -> str:
        tokens.append(ctx.token)
        argument_views.append(args)
        return "ok"

    scope.register(string_tool("t", execute))

    async def pre(execution: ToolExecution, next: Any) -> Any:
        tokens.append(execution.token)
        argument_views.append(execution.arguments)
        return await next()

    async def around(execution: ToolExecution, next: Any) -> Any:
        tokens.append(execution.token)
        return await next()

    async def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        tokens.append(execution.token)
        return await next()

    scope.on("tools/pre-execute", pre)
    scope.on("tools/execute", around)
    scope.on("tools/post-execute", post)
    scope.on("tools/result", lambda execution, result: tokens.append(execution.token))
    caller_arguments = {"nested": {"list": ["original"]}}

    first = await runtime.call("t", caller_arguments, agent="a")
    second_tokens_start = len(tokens)
    await runtime.call("t", caller_arguments, agent="a")

    assert first.value == "ok"
    assert len(tokens[:second_tokens_start]) == 5
    assert all(token is tokens[0] for token in tokens[:second_tokens_start])
    assert isinstance(tokens[0], ExecutionToken)
    assert tokens[second_tokens_start] is not tokens[0]
    body_args = argument_views[1]
    assert body_args is argument_views[0]
    assert body_args == caller_arguments
    assert body_args is not caller_arguments
    with pytest.raises(TypeError):
        body_args["nested"]["list"][0] = "mutated"
    with pytest.raises(TypeError):
        body_args["injected"] = True
    caller_arguments["nested"]["list"].append("caller may still mutate")  # not frozen
    assert body_args == {"nested": {"list": ["original"]}}


async def test_normalizes_non_cloneable_arguments_and_still_publishes_one_scoped_final_outcome() -> None:
    """scoped execution dispatch › normalizes non-cloneable arguments and still publishes one scoped
    final outcome (E3)."""
    runtime, body = counted_runtime()
    phases = PhaseCounter(runtime)
    scope = runtime.scope("a")
    scoped: list[Any] = []
    scope.on("tools/result", lambda execution, result: scoped.append((execution, result)))

    result = await runtime.call("t", {"callback": lambda: None}, agent="a")

    assert result == ToolFailure(
        error=type(result.error)(ARGS_NOT_LOSSLESS), content=text(f"Error: {ARGS_NOT_LOSSLESS}")
    )
    assert result.error.info is None
    assert phases.policy() == (0, 0, 0, 0)
    assert body.count == 0
    assert len(scoped) == 1
    assert len(phases.results) == 1
    execution, observed = scoped[0]
    assert observed is result
    assert execution.arguments is None
    assert execution.frozen


class _Arguments:
    value = 1


@dataclasses.dataclass
class _DataArguments:
    value: int = 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"mutable", "set"},
        frozenset({"x"}),
        _Arguments(),
        _DataArguments(),
        b"bytes",
        datetime.datetime(2024, 1, 1),
        {"nested": {"when": datetime.date(2024, 1, 1)}},
        {"count": float("nan")},
        {"big": 2**53 + 1},
        {1: "non-string key"},
    ],
    ids=[
        "set",
        "frozenset",
        "class-instance",
        "dataclass",
        "bytes",
        "datetime",
        "nested-date",
        "nan",
        "unsafe-int",
        "int-key",
    ],
)
async def test_rejects_cloneable_non_json_arguments_before_policy_or_dispatch(arguments: Any) -> None:
    """scoped execution dispatch › rejects cloneable non-JSON arguments (%s) before policy or dispatch
    (§3.2 item 23). Python counterparts of Map / class instance: sets, objects, bytes, dates, lossy
    numbers, non-string keys."""
    runtime, body = counted_runtime()
    phases = PhaseCounter(runtime)

    result = await runtime.call("t", arguments)

    assert isinstance(result, ToolFailure)
    assert result.content == text(f"Error: {ARGS_NOT_LOSSLESS}")
    assert result.error.message == ARGS_NOT_LOSSLESS
    assert result.error.info is None
    assert phases.policy() == (0, 0, 0, 0)
    assert body.count == 0
    [(execution, observed)] = phases.results
    assert observed is result
    assert execution.arguments is None


def _counting_input_class(field: str, values: list[Any]) -> type[ToolExecutionInput]:
    """A ToolExecutionInput whose ``field`` is a stateful accessor: each read returns the next value."""
    reads: list[int] = []

    def getter(self: Any) -> Any:
        reads.append(1)
        return values[min(len(reads), len(values)) - 1]

    def setter(self: Any, value: Any) -> None:
        pass

    cls = type("StatefulInput", (ToolExecutionInput,), {field: property(getter, setter)})
    cls.reads = reads  # type: ignore[attr-defined]
    return cls


async def test_reads_a_stateful_parent_accessor_once_before_policy_dispatch_and_result() -> None:
    """scoped execution dispatch › reads a stateful parent accessor once before policy, dispatch, and
    result observation (D4). Python counterpart: a property on a ToolExecutionInput subclass."""
    first, drifted = ExecutionToken(), ExecutionToken()
    cls = _counting_input_class("parent", [first, drifted])
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    seen: list[Any] = []

    async def execute(args: Any, ctx: Any) -> str:
        seen.append(("body", ctx.parent))
        return "ok"

    runtime.register(string_tool("t", execute, parameters={}))

    async def pre(execution: ToolExecution, next: Any) -> Any:
        seen.append(("pre", execution.parent))
        return await next()

    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/result", lambda execution, result: seen.append(("result", execution.parent)))
    call = cls(call_id="c1", name="t", arguments={}, signal=AbortSignal(), parent=None)

    result = await runtime.execute(call)

    assert result.value == "ok"
    assert [label for label, _ in seen] == ["pre", "body", "result"]
    assert all(parent is first for _, parent in seen)
    assert len(cls.reads) == 1  # type: ignore[attr-defined]


async def test_uses_one_input_snapshot_for_the_normalized_error_shell() -> None:
    """scoped execution dispatch › uses one input snapshot for the normalized error shell: the error
    result for invalid arguments is published under the name/call id read first."""
    name_cls = _counting_input_class("call_id", ["c-first", "c-drifted"])
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("t"))
    seen: list[Any] = []
    runtime.on("tools/result", lambda execution, result: seen.append((execution.call_id, execution.name)))

    call = name_cls(call_id="ignored", name="t", arguments={"bad": {1, 2}}, signal=AbortSignal())
    result = await runtime.execute(call)

    assert result.error.message == ARGS_NOT_LOSSLESS
    assert seen == [("c-first", "t")]
    assert len(name_cls.reads) == 1  # type: ignore[attr-defined]


class _ExplodingArguments(list):  # type: ignore[type-arg]
    """An arguments value whose iteration (the Python 'accessor') raises and counts reads."""

    reads = 0

    def __iter__(self) -> Any:
        type(self).reads += 1
        raise RuntimeError("arguments accessor exploded")


class _CountingArguments(list):  # type: ignore[type-arg]
    reads = 0

    def __iter__(self) -> Any:
        type(self).reads += 1
        return super().__iter__()


async def test_normalizes_a_throwing_arguments_accessor_without_rereading_it() -> None:
    """scoped execution dispatch › normalizes a throwing arguments accessor without rereading it or
    losing the final notification (E3). Python counterpart chosen: an arguments value whose iteration
    raises during the snapshot (the error is that accessor's message, not the lossless one)."""
    runtime, body = counted_runtime()
    phases = PhaseCounter(runtime)
    _ExplodingArguments.reads = 0

    result = await runtime.call("t", _ExplodingArguments(["x"]))

    assert result.content == text("Error: arguments accessor exploded")
    assert result.error.message == "arguments accessor exploded"
    assert _ExplodingArguments.reads == 1
    assert phases.policy() == (0, 0, 0, 0)
    assert body.count == 0
    [(execution, observed)] = phases.results
    assert observed is result
    assert execution.arguments is None


async def test_reads_nested_arguments_once_into_the_executed_snapshot() -> None:
    """scoped execution dispatch › reads nested arguments once into the executed snapshot."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    received: list[Any] = []

    async def execute(args: Any, ctx: Any) -> str:
        received.append(args)
        return "ok"

    runtime.register(string_tool("t", execute, parameters={}))
    runtime.on("tools/pre-execute", lambda execution, next: next())
    runtime.on("tools/post-execute", lambda execution, result, next: next())
    _CountingArguments.reads = 0
    nested = _CountingArguments(["a", "b"])

    result = await runtime.call("t", {"items": nested})

    assert result.value == "ok"
    assert _CountingArguments.reads == 1
    assert received == [{"items": ["a", "b"]}]
    assert type(received[0]["items"]) is not _CountingArguments


async def test_notifies_every_tools_result_observer_with_the_frozen_outcome_and_contains_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """scoped execution dispatch › notifies every tools/result observer with the frozen final outcome
    and contains failures (§3.2 item 23; E24)."""
    caplog.set_level(logging.WARNING, logger="toolrt")
    runtime, scope = agent_scope_over("t", agent="a")
    received: list[tuple[str, Any]] = []

    def sync_failure(execution: ToolExecution, result: Any) -> None:
        raise RuntimeError("sync observer broke")

    async def async_failure(execution: ToolExecution, result: Any) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("async observer broke")

    runtime.on("tools/result", lambda execution, result: received.append(("first", result)))
    scope.on("tools/result", sync_failure)
    runtime.on("tools/result", async_failure)
    scope.on("tools/result", lambda execution, result: received.append(("scoped", result)))
    runtime.on("tools/result", lambda execution, result: received.append(("last", result)))

    result = await runtime.call("t", agent="a", call_id="call-7")
    for _ in range(20):
        if len(caplog.records) >= 2:
            break
        await asyncio.sleep(0.01)

    assert result.value == "ran:t"
    assert [label for label, _ in received] == ["first", "scoped", "last"]
    assert all(observed is result for _, observed in received)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.content = []  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.content.append({"type": "text", "text": "tampered"})
    with pytest.raises(TypeError):
        result.content[0]["text"] = "tampered"
    messages = sorted(record.getMessage() for record in caplog.records if record.name == "toolrt")
    assert messages == sorted(
        [
            OBSERVER_FAILED.format("t", "call-7", "sync observer broke"),
            OBSERVER_FAILED.format("t", "call-7", "async observer broke"),
        ]
    )
    assert all(record.levelno == logging.WARNING for record in caplog.records if record.name == "toolrt")


# --- presentation: present_as, mode_for and the executor collapse ---------------------------------


def collapsed_message(name: str) -> str:
    return (
        f'unknown tool "{name}": only `run_code` is callable directly \u2014 call `{name}` from inside a '
        "`run_code` program instead"
    )


def test_present_as_requires_a_scoped_context() -> None:
    """P2: unscoped ``present_as`` → ``requires a scoped context``, naming the config alternative."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(ValueError) as raised:
        runtime.present_as("code")
    message = str(raised.value)
    assert "requires a scoped context (runtime.scope(agent))" in message
    assert message.endswith("a context-global presentation is the `mode` config field on the tools row")
    assert runtime.mode_for() == "native"


def test_present_as_rejects_a_second_declaration_in_the_same_scope() -> None:
    """P2: a second declaration → ``conflicts with "<existing>" already declared for this scope``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    scope = runtime.scope("a")
    scope.present_as("code")
    with pytest.raises(ValueError) as raised:
        scope.present_as("both")
    assert (
        '("both") conflicts with "code" already declared for this scope; one composition selects one '
        in str(raised.value)
    )
    assert str(raised.value).endswith("one composition selects one presentation")
    with pytest.raises(ValueError, match='conflicts with "code"'):
        scope.present_as("code")
    assert runtime.mode_for(scope) == "code"


def test_present_as_messages_name_the_python_api() -> None:
    """P2 messages under decision 0001: ``tools.presentAs`` → ``tools.present_as``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(ValueError) as unscoped:
        runtime.present_as("code")
    scope = runtime.scope("a")
    scope.present_as("code")
    with pytest.raises(ValueError) as conflict:
        scope.present_as("both")
    assert str(unscoped.value) == (
        "tools.present_as() requires a scoped context (runtime.scope(agent)): a context-global "
        "presentation is the `mode` config field on the tools row"
    )
    assert str(conflict.value) == (
        'tools.present_as("both") conflicts with "code" already declared for this scope; one composition '
        "selects one presentation"
    )


def test_present_as_rejects_an_unknown_mode() -> None:
    """Python-specific: a mode outside native/code/both is refused (upstream's type system does it)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    scope = runtime.scope("a")
    with pytest.raises(ValueError, match="must be one of"):
        scope.present_as("python")  # type: ignore[arg-type]
    assert runtime.mode_for(scope) == "native"
    scope.present_as("code")  # the failed call declared nothing


@pytest.mark.parametrize("mode", ["native", "code", "both"])
@pytest.mark.parametrize("default", ["native", "code", "both"])
def test_present_as_accepts_every_mode_and_its_disposal_restores_the_default(mode: Any, default: Any) -> None:
    """P1/P2: native, code and both are accepted; disposal restores the deployment default."""
    runtime = ToolRuntime(mode=default, code_runtime=FakeRuntime())
    scope = runtime.scope("a")
    dispose = scope.present_as(mode)
    assert runtime.mode_for(scope) == mode
    assert runtime.mode_for("a") == mode
    assert runtime.mode_for() == default

    dispose()
    assert runtime.mode_for(scope) == default
    scope.present_as(mode)  # a new declaration is possible after disposal


def test_mode_for_inherits_the_nearest_declaration_down_a_parent_chain() -> None:
    """P3: ``mode_for`` = nearest declared mode on the chain (own first), else the config default."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    preset = runtime.scope("preset:code-like")
    joined = runtime.scope("joined-agent", parent=preset)
    grandchild = runtime.scope("grandchild", parent=joined)
    loner = runtime.scope("loner-agent")
    preset.present_as("code")

    assert runtime.mode_for(preset) == "code"
    assert runtime.mode_for(joined) == "code"
    assert runtime.mode_for(grandchild) == "code"
    assert runtime.mode_for(loner) == "native"
    assert runtime.mode_for() == "native"

    undo = joined.present_as("both")
    assert runtime.mode_for(joined) == "both"
    assert runtime.mode_for(grandchild) == "both"
    assert runtime.mode_for(preset) == "code"
    undo()
    assert runtime.mode_for(grandchild) == "code"


async def test_a_model_direct_call_under_code_mode_is_unknown_tool_with_the_route_back() -> None:
    """C1/C2 (§3.2 item 33): under effective ``code`` a direct call to another visible tool is
    ``UNKNOWN_TOOL`` naming the route through ``run_code``; no policy stage runs, tools/result does."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    body = Counter()
    finalized = Counter()

    def finalize(execution: ToolExecution, result: Any) -> Any:
        finalized.calls.append(result)
        return text("finalized")

    runtime.register(raw_tool("echo", counter=body, finalize_content=finalize))
    phases = PhaseCounter(runtime)
    scope = runtime.scope("a")
    scope.present_as("code")

    result = await runtime.call("echo", {"value": "x"}, agent="a")

    assert isinstance(result, ToolFailure)
    assert result.error.message == collapsed_message("echo")
    assert "\u2014" in result.error.message
    assert result.error.info == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")
    assert result.content == text(f"Error: {collapsed_message('echo')}")
    assert body.count == 0
    assert finalized.count == 0  # the collapse denial drops the finalizer
    assert phases.policy() == (0, 0, 0, 0)
    assert len(phases.results) == 1
    # get()/schemas() are not collapsed (C3): programs still bind everything.
    assert runtime.get("echo", scope) is not None
    assert "echo" in names(scope.schemas())


async def test_a_pre_aborted_collapsed_call_is_aborted_before_dispatch_with_the_finalizer() -> None:
    """C2(a): a collapsed call whose signal is already aborted → ``ABORTED_BEFORE_DISPATCH``, with the
    visible tool's ``finalize_content`` applied."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    body = Counter()
    runtime.register(
        raw_tool("write", counter=body, finalize_content=lambda execution, result: text("finalized abort"))
    )
    phases = PhaseCounter(runtime)
    runtime.scope("a").present_as("code")

    result = await runtime.call(
        "write", {"text": "hello"}, agent="a", signal=AbortSignal.aborted_with("stop")
    )

    assert isinstance(result, ToolFailure)
    assert result.error.message == "tool call aborted before dispatch"
    assert result.error.info == ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH")
    assert result.content == text("finalized abort")
    assert body.count == 0
    assert phases.policy() == (0, 0, 0, 0)
    assert len(phases.results) == 1


@pytest.mark.parametrize("aborted", [False, True], ids=["live", "pre-aborted"])
async def test_invalid_arguments_win_over_the_collapse(aborted: bool) -> None:
    """C2 / E3: argument materialization failure wins; its finalizer is dropped unless aborted."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("write", finalize_content=lambda execution, result: text("finalized")))
    runtime.scope("a").present_as("code")
    signal = AbortSignal.aborted_with("stop") if aborted else AbortSignal()

    result = await runtime.call("write", {"bad": {1}}, agent="a", signal=signal)

    assert result.error.message == ARGS_NOT_LOSSLESS
    assert result.content == text("finalized" if aborted else f"Error: {ARGS_NOT_LOSSLESS}")


async def test_collapse_leaves_unknown_names_nested_calls_and_other_modes_alone() -> None:
    """C1/C4/§4.1 #13: an invisible name stays a plain unknown tool (through the pipeline); nested
    calls (with ``parent``) and ``both``/``native`` scopes execute normally."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("echo"))
    phases = PhaseCounter(runtime)
    runtime.scope("coded").present_as("code")
    runtime.scope("both").present_as("both")
    runtime.scope("native").present_as("native")

    unknown = await runtime.call("nope", agent="coded")
    assert_unknown_tool(unknown, "nope")
    assert phases.policy() == (1, 1, 1, 1)

    assert (await runtime.call("echo", agent="coded", parent=ExecutionToken())).value == "ran:echo"
    assert (await runtime.call("echo", agent="both")).value == "ran:echo"
    assert (await runtime.call("echo", agent="native")).value == "ran:echo"
    assert (await runtime.call("echo")).value == "ran:echo"


async def test_a_preset_scope_declaring_code_covers_every_agent_parented_to_it() -> None:
    """§3.2 item 33 (runtime-free part): a standing preset scope declaring ``code`` collapses direct
    calls of its joined agents; a sibling that is not parented stays native."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())

    async def execute(args: Any, ctx: Any) -> str:
        return f"echo:{args['value']}"

    runtime.register(string_tool("echo", execute))
    preset = runtime.scope("preset:code-like")
    runtime.scope("joined-agent", parent=preset)
    runtime.scope("loner-agent")
    preset.present_as("code")

    joined = await runtime.call("echo", {"value": "joined"}, agent="joined-agent")
    assert joined.error.message == collapsed_message("echo")
    loner = await runtime.call("echo", {"value": "loner"}, agent="loner-agent")
    assert isinstance(loner, ToolSuccess)
    assert loner.value == "echo:loner"


async def test_a_code_deployment_collapses_agent_less_calls_and_a_scope_can_opt_out() -> None:
    """P1/C1 (§3.2 item 33 opt-out): the deployment default applies to scopes declaring nothing and to
    agent-less calls; ``present_as("native")`` opts a scope out."""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    runtime.register(raw_tool("echo"))
    runtime.scope("opted-out").present_as("native")
    runtime.scope("default")

    assert (await runtime.call("echo")).error.message == collapsed_message("echo")
    assert (await runtime.call("echo", agent="default")).error.message == collapsed_message("echo")
    assert (await runtime.call("echo", agent="opted-out")).value == "ran:echo"


async def test_post_execute_accept_is_not_needed_for_a_collapsed_call() -> None:
    """C2: a post-execute listener that would rewrite every result never sees a collapsed call."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("echo"))
    runtime.on(
        "tools/post-execute", lambda execution, result, next: Accept(content=text("rewritten by policy"))
    )
    runtime.scope("a").present_as("code")

    collapsed = await runtime.call("echo", agent="a")
    direct = await runtime.call("echo")

    assert collapsed.content == text(f"Error: {collapsed_message('echo')}")
    assert direct.content == text("rewritten by policy")


async def test_the_collapse_tracks_every_code_declaration_independently() -> None:
    """C1 + P2 disposal: closing one ``code`` scope (or a rolled-back declaration) never lifts the
    collapse of another scope that still declares ``code``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("echo"))
    first = runtime.scope("first")
    second = runtime.scope("second")
    first.present_as("code")
    second.present_as("code")

    def explode(change: Any) -> None:
        raise RuntimeError("change listener exploded")

    with runtime.on("tools/change", explode):
        with pytest.raises(RuntimeError, match="change listener exploded"):
            runtime.scope("rolled-back").present_as("code")
    assert runtime.mode_for("rolled-back") == "native"
    assert (await runtime.call("echo", agent="rolled-back")).value == "ran:echo"

    first.close()

    assert (await runtime.call("echo", agent="first")).value == "ran:echo"
    assert (await runtime.call("echo", agent="second")).error.message == collapsed_message("echo")
    third = runtime.scope("third")
    third.present_as("code")
    second.close()
    assert (await runtime.call("echo", agent="third")).error.message == collapsed_message("echo")
    assert (await runtime.call("echo", agent="second")).value == "ran:echo"
