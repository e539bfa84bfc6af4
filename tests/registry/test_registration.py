"""Registration, schemas() projection, disposers and ``ToolRuntime.get`` (contract §2.1 D1, §2.2 R1–R7).

Ports the registration titles at the end of upstream ``tools.spec.ts › describe: ToolRuntime``, the
``ToolRuntime.get`` describe and §3.2 items 2 and 19. Upstream titles are quoted in each docstring.
Developer-facing messages follow decision 0001 (``agent.ctx`` → ``runtime.scope(agent)``,
``timeoutMs`` → ``timeout_ms``, ``presentationMeta`` → ``presentation_meta``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import helpers
from code_mode_fakes import FakeRuntime
from helpers import text
from toolrt import AbortSignal, JsonSchemaError, ToolDefinition, ToolFailure, ToolOutput, ToolRuntime
from toolrt.lowlevel import ToolErrorInfo, ToolsChange

RUN_CODE_RESERVED = (
    'tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered '
    "or shadowed"
)
MUST_DECLARE_OUTPUT = 'tool "{}" must declare output {{ schema, render, presentation_meta? }}'
TIMEOUT_MESSAGE = 'tool "{}" timeout_ms must be a positive finite number'
GLOBAL_DUPLICATE = (
    'tool "{}" is already registered (for a per-agent variant, register through that agent\'s scope, '
    "`runtime.scope(agent)`, instead)"
)


# --- local helpers ---------------------------------------------------------------------------------


def raw_tool(name: str, reply: str | None = None, *, parameters: Any = None, **extra: Any) -> ToolDefinition:
    """:func:`helpers.raw_tool` taking ``{"type": "object", "properties": {}}`` by default."""
    return helpers.raw_tool(
        name,
        reply,
        parameters={"type": "object", "properties": {}} if parameters is None else parameters,
        **extra,
    )


def echo_tool() -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> str:
        return args.get("text", "")

    return ToolDefinition(
        name="echo",
        description="echo arguments back",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        output=ToolOutput(schema={"type": "string"}),
        execute=execute,
    )


def names(schemas: list[Any]) -> list[str]:
    return [schema["name"] for schema in schemas]


def assert_unknown_tool(result: Any, name: str) -> None:
    assert isinstance(result, ToolFailure)
    assert result.error.message == f'unknown tool "{name}"'
    assert result.error.info == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")
    assert result.content == text(f'Error: unknown tool "{name}"')


def record_changes(runtime: ToolRuntime) -> list[ToolsChange]:
    changes: list[ToolsChange] = []
    runtime.on("tools/change", changes.append)
    return changes


# --- schemas() ------------------------------------------------------------------------------------


async def test_registers_tools_and_exposes_exactly_the_model_facing_schema() -> None:
    """registers tools, exposes schemas, and feeds the system-prompt assembly (§3.2 item 2).

    The system-prompt assembly is not part of toolrt; the schema projection is.
    """
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(echo_tool())

    assert runtime.schemas() == [
        {
            "name": "echo",
            "description": "echo arguments back",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]
    result = await runtime.call("echo", {"text": "hi"}, call_id="c1")
    assert not result.is_error
    assert result.value == "hi"
    assert result.content == text("hi")


def test_schemas_drop_host_callbacks_and_timeout() -> None:
    """schemas() drops host callbacks — they must never reach the model; schemas() excludes timeoutMs."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(
        raw_tool(
            "loaded",
            finalize_content=lambda execution, result: None,
            timeout_ms=1234,
            is_concurrency_safe=lambda args: True,
            present_call=lambda args: None,
            present_result=lambda args, result: None,
            run_inline=False,
        )
    )

    [schema] = runtime.schemas()
    assert sorted(schema) == ["description", "name", "parameters"]
    assert "1234" not in json.dumps(schema)


def test_schemas_snapshot_tool_schemas_instead_of_exposing_registry_objects() -> None:
    """schemas() snapshots tool schemas instead of exposing registry objects (R6)."""
    parameters = {"type": "object", "properties": {"path": {"type": "string", "enum": ["a", "b"]}}}
    definition = raw_tool("read", parameters=parameters)
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(definition)

    first = runtime.schemas()[0]["parameters"]
    assert first == parameters
    assert first is not parameters
    first["properties"]["path"]["enum"].append("c")
    first["properties"]["injected"] = {"type": "string"}
    first["type"] = "array"

    assert runtime.schemas()[0]["parameters"] == {
        "type": "object",
        "properties": {"path": {"type": "string", "enum": ["a", "b"]}},
    }
    assert parameters == {"type": "object", "properties": {"path": {"type": "string", "enum": ["a", "b"]}}}
    assert definition.parameters is parameters


def test_schemas_snapshot_deeply_nested_parameters_without_recursion() -> None:
    """schemas() snapshots deeply nested parameters without using structured-clone recursion."""
    depth = 50_000
    root: dict[str, Any] = {"type": "object", "properties": {}}
    cursor = root
    for _ in range(depth):
        child: dict[str, Any] = {"type": "object", "properties": {}}
        cursor["properties"]["n"] = child
        cursor = child
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("deep", parameters=root))

    projected = runtime.schemas()[0]["parameters"]

    # Walk both trees side by side without recursion (== on them would recurse).
    levels = 0
    source, copy = root, projected
    while source["properties"]:
        assert copy is not source
        assert type(copy) is dict
        assert copy["type"] == "object"
        source, copy = source["properties"]["n"], copy["properties"]["n"]
        levels += 1
    assert levels == depth
    assert copy == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    "lossy",
    [
        math.nan,
        math.inf,
        {"bad", "set"},
        {1: "non-string key"},
        2**53 + 1,
    ],
    ids=["nan", "inf", "set", "int-key", "unsafe-int"],
)
def test_rejects_schema_projection_when_a_raw_registration_is_not_lossless_json(lossy: Any) -> None:
    """rejects schema projection when a raw registration is not lossless JSON (§3.2 item 19)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("lossy-schema", parameters={"type": "object", "default": lossy}))

    with pytest.raises(TypeError) as raised:
        runtime.schemas()
    assert (
        str(raised.value) == 'tool "lossy-schema" parameters must be lossless JSON before schema projection'
    )
    with pytest.raises(TypeError, match="before schema projection"):
        runtime.schemas(runtime.scope("agent"))


async def test_raw_parameters_outside_the_subset_are_refused_at_registration() -> None:
    """J8 (toolrt's change to R2): raw ``parameters`` outside the subset are refused when the tool is
    registered, naming the path and the keyword, and nothing is registered; arguments of a raw tool
    whose schema is inside the subset are still not validated (S-DSL6)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(JsonSchemaError, match=r"odd\.parameters.*anyOf"):
        runtime.register(raw_tool("odd", parameters={"type": "object", "anyOf": [{"pattern": "x"}]}))
    assert names(runtime.schemas()) == []

    runtime.register(raw_tool("loose", parameters={"type": "object"}))
    assert (await runtime.call("loose", {"anything": 1})).value == "ran:loose"


# --- registration checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        None,
        {"schema": {"type": "string"}, "render": lambda args, value: []},
        ToolOutput(schema={"type": "string"}, render=None),  # type: ignore[arg-type]
        ToolOutput(schema={"type": "string"}, presentation_meta="not callable"),  # type: ignore[arg-type]
    ],
    ids=["missing", "plain-dict", "render-not-callable", "meta-not-callable"],
)
def test_requires_every_raw_registration_to_declare_its_canonical_output(output: Any) -> None:
    """requires every raw registration to declare its canonical output (R2 check 1)."""

    async def execute(args: Any, ctx: Any) -> str:
        return ""

    definition = ToolDefinition(
        name="no-output", description="", parameters={"type": "object"}, output=output, execute=execute
    )
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(TypeError) as raised:
        runtime.register(definition)
    assert str(raised.value) == MUST_DECLARE_OUTPUT.format("no-output")
    assert runtime.get("no-output") is None
    assert runtime.schemas() == []


def test_rejects_an_unsupported_output_schema_at_registration() -> None:
    """R2 check 2: ``assert_supported_json_schema(output.schema)`` raises JsonSchemaError."""

    async def execute(args: Any, ctx: Any) -> str:
        return ""

    runtime = ToolRuntime(code_runtime=FakeRuntime())
    definition = ToolDefinition(
        name="bad-output",
        description="",
        parameters={"type": "object"},
        output=ToolOutput(schema={"type": "string", "pattern": "x"}),
        execute=execute,
    )
    with pytest.raises(JsonSchemaError) as raised:
        runtime.register(definition)
    assert raised.value.code == "UNSUPPORTED_SCHEMA"
    assert str(raised.value).startswith("unsupported JSON schema: schema.pattern is not a supported keyword")
    assert runtime.get("bad-output") is None


@pytest.mark.parametrize("timeout", [0, -1, -0.5, math.inf, -math.inf, math.nan, True, "500"], ids=repr)
def test_rejects_a_non_positive_or_non_finite_registration_timeout(timeout: Any) -> None:
    """rejects a non-positive or non-finite registration timeout (R2 check 3).

    Python-specific: ``True`` and ``"500"`` are not numbers here (bool is never a number).
    """
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with pytest.raises(TypeError) as raised:
        runtime.register(raw_tool("slow", timeout_ms=timeout))
    assert str(raised.value) == TIMEOUT_MESSAGE.format("slow")
    assert runtime.get("slow") is None


@pytest.mark.parametrize("timeout", [0.5, 1, 60_000])
def test_accepts_a_positive_finite_registration_timeout(timeout: float) -> None:
    """R2 check 3, positive side: the budget is kept on the definition (declarative only)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("slow", timeout_ms=timeout))
    definition = runtime.get("slow")
    assert definition is not None
    assert definition.timeout_ms == timeout


def test_registration_checks_run_in_the_documented_order() -> None:
    """R2: output, then output schema, then timeout, then run_code, then duplicate."""

    async def execute(args: Any, ctx: Any) -> str:
        return ""

    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("dup"))

    def make(name: str, output: Any, timeout: Any = None) -> ToolDefinition:
        return ToolDefinition(
            name=name,
            description="",
            parameters={"type": "object"},
            output=output,
            execute=execute,
            timeout_ms=timeout,
        )

    good = ToolOutput(schema={"type": "string"})
    bad_schema = ToolOutput(schema={"type": "tuple"})
    with pytest.raises(TypeError, match=r"must declare output"):
        runtime.register(make("run_code", None, 0))
    with pytest.raises(JsonSchemaError):
        runtime.register(make("run_code", bad_schema, 0))
    with pytest.raises(TypeError, match=r"timeout_ms must be a positive finite number"):
        runtime.register(make("run_code", good, 0))
    with pytest.raises(TypeError, match=r"timeout_ms must be a positive finite number"):
        runtime.register(make("dup", good, -1))
    with pytest.raises(ValueError, match=r"is reserved for the Code Mode presentation transport"):
        runtime.register(make("run_code", good))
    with pytest.raises(ValueError, match=r"already registered"):
        runtime.register(make("dup", good))


@pytest.mark.parametrize("mode", ["native", "code", "both"])
def test_run_code_cannot_be_registered_or_reserved_in_any_mode_or_layer(mode: Any) -> None:
    """R2 check 4 / RS1: ``run_code`` is reserved in every mode, including native, and in scopes."""
    runtime = ToolRuntime(mode=mode, code_runtime=FakeRuntime())
    scope = runtime.scope("agent")
    changes = record_changes(runtime)

    for target in (runtime, scope):
        with pytest.raises(ValueError) as raised:
            target.register(raw_tool("run_code"))
        assert str(raised.value) == RUN_CODE_RESERVED
        with pytest.raises(ValueError) as raised:
            target.reserve("run_code")
        assert str(raised.value) == RUN_CODE_RESERVED

    for declared in ("native", "code", "both"):
        with runtime.scope(f"presenting-{declared}") as presenting:
            presenting.present_as(declared)
            with pytest.raises(ValueError, match=r"is reserved for the Code Mode"):
                presenting.register(raw_tool("run_code"))
    assert all(change.name != "run_code" for change in changes)


def test_rejects_duplicate_global_names_naming_the_scope_api() -> None:
    """rejects duplicate names (§3.2 item 19; global message names ``runtime.scope(agent)``).

    Upstream names ``agent.ctx``; decision 0001 maps it to ``runtime.scope(agent)``. Chosen: pin the
    full wording toolrt emits, which keeps every upstream key phrase.
    """
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    first = raw_tool("twice", "first")
    runtime.register(first)

    with pytest.raises(ValueError) as raised:
        runtime.register(raw_tool("twice", "second"))
    assert str(raised.value) == GLOBAL_DUPLICATE.format("twice")
    assert runtime.get("twice") is first


async def test_rejects_duplicate_names_and_unregisters_on_dispose() -> None:
    """rejects duplicate names and unregisters on fiber dispose (HMR safety)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("hmr", "v1"))
    with pytest.raises(ValueError, match="already registered"):
        runtime.register(raw_tool("hmr", "v2"))

    runtime.close()  # the owning "fiber" unloads
    assert runtime.get("hmr") is None
    assert runtime.schemas() == []
    assert_unknown_tool(await runtime.call("hmr"), "hmr")

    runtime.register(raw_tool("hmr", "v2"))  # the reloaded plugin registers again
    assert (await runtime.call("hmr")).value == "v2"


async def test_returns_a_callable_disposer_from_register_that_unregisters_the_tool() -> None:
    """returns a callable disposer from register() that unregisters the tool."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    changes = record_changes(runtime)
    dispose = runtime.register(raw_tool("temp"))
    assert not dispose.disposed

    dispose()

    assert dispose.disposed
    assert runtime.get("temp") is None
    assert runtime.schemas() == []
    assert_unknown_tool(await runtime.call("temp"), "temp")
    dispose()  # idempotent
    assert [change.kind for change in changes] == ["register", "unregister"]


def test_disposer_is_a_context_manager() -> None:
    """Decision 0001: every disposer is also a context manager."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    with runtime.register(raw_tool("scoped-by-with")) as dispose:
        assert runtime.get("scoped-by-with") is not None
        assert not dispose.disposed
    assert dispose.disposed
    assert runtime.get("scoped-by-with") is None


def test_a_stale_disposer_never_removes_a_later_registration_of_the_same_name() -> None:
    """R1: each registration returns *its* disposer; disposing twice cannot hit a re-registration."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    dispose_first = runtime.register(raw_tool("again", "first"))
    dispose_first()
    second = raw_tool("again", "second")
    runtime.register(second)

    dispose_first()

    assert runtime.get("again") is second


def test_rolls_back_the_tool_entry_when_a_tools_change_listener_throws() -> None:
    """rolls back the tool entry when a tools/change listener throws (P1-1) (R3)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())

    def explode(change: ToolsChange) -> None:
        raise RuntimeError("boom change listener")

    remove = runtime.on("tools/change", explode)
    with pytest.raises(RuntimeError, match="boom change listener"):
        runtime.register(raw_tool("fragile"))
    assert runtime.get("fragile") is None
    assert runtime.schemas() == []

    scope = runtime.scope("agent")
    with pytest.raises(RuntimeError, match="boom change listener"):
        scope.register(raw_tool("fragile"))
    assert runtime.get("fragile", scope) is None

    remove()
    runtime.register(raw_tool("fragile"))
    scope.register(raw_tool("fragile"))
    assert runtime.get("fragile") is not None


def test_register_returns_the_exact_disposer_and_close_tears_down_newest_first() -> None:
    """register() returns the EXACT effect disposer: a composite yield nests the teardown in order.

    Python shape: the disposer register() returns is the one the owner (scope) holds, so disposing
    it early removes it from the owner's teardown; close() undoes the rest newest first.
    """
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(raw_tool("base"))
    scope = runtime.scope("agent")
    changes = record_changes(runtime)
    scope.register(raw_tool("a"))
    dispose_b = scope.register(raw_tool("b"))
    scope.reserve("r")
    scope.restrict(deny=["base"])
    scope.register(raw_tool("c"))
    dispose_b()
    del changes[:]

    scope.close()

    assert [(change.kind, change.name) for change in changes] == [
        ("unregister", "c"),
        ("unrestrict", None),
        ("unreserve", "r"),
        ("unregister", "a"),
    ]
    assert all(change.scope == "agent" for change in changes)
    assert names(runtime.schemas("agent")) == ["base"]


def test_tools_change_is_emitted_by_every_mutation_except_guard() -> None:
    """R3, §4.1 #4: register/unregister, reserve, restrict/lift and present_as notify; guard does not."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    changes = record_changes(runtime)
    scope = runtime.scope("agent")
    scoped_changes: list[ToolsChange] = []
    scope.on("tools/change", scoped_changes.append)

    undo = [
        runtime.register(raw_tool("g")),
        scope.register(raw_tool("s")),
        runtime.reserve("later"),
        scope.restrict(deny=["g"]),
        scope.present_as("both"),
    ]
    runtime.guard(lambda execution: None)
    scope.guard(lambda execution: None)
    for dispose in reversed(undo):
        dispose()

    assert [(change.kind, change.scope) for change in changes] == [
        ("register", None),
        ("register", "agent"),
        ("reserve", None),
        ("restrict", "agent"),
        ("present", "agent"),
        ("unpresent", "agent"),
        ("unrestrict", "agent"),
        ("unreserve", None),
        ("unregister", "agent"),
        ("unregister", None),
    ]
    # tools/change is unfiltered: a scope's listener hears global changes too.
    assert scoped_changes == changes


# --- get() and visibility -------------------------------------------------------------------------


def test_get_returns_the_registered_tool_definition() -> None:
    """ToolRuntime.get › get() returns the registered tool definition."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    definition = echo_tool()
    runtime.register(definition)

    assert runtime.get("echo") is definition
    assert runtime.get("echo", "some-agent") is definition
    assert runtime.scope("agent").get("echo") is definition


def test_get_returns_none_for_unknown_tool_names() -> None:
    """ToolRuntime.get › get() returns undefined for unknown tool names."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(echo_tool())
    runtime.reserve("reserved-only")

    assert runtime.get("nope") is None
    assert runtime.get("Echo") is None
    assert runtime.get("reserved-only") is None
    assert runtime.get("run_code") is None


async def test_unknown_tools_come_back_as_unknown_tool_results() -> None:
    """R7: a name not visible to the caller reads as ``Error: unknown tool "<name>"``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    result = await runtime.call("nope", {}, signal=AbortSignal())

    assert_unknown_tool(result, "nope")
    assert result.meta is None
    assert list(result.additional_contexts) == []


async def test_runtime_close_closes_every_scope_and_undoes_every_global_registration() -> None:
    """R1 (Python shape): ``runtime.close()`` closes every scope and undoes global registrations."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    seen: list[str] = []
    runtime.register(raw_tool("g"))
    runtime.reserve("deferred")
    runtime.guard(lambda execution: "global guard")
    runtime.on("tools/result", lambda execution, result: seen.append(execution.call_id))
    scope = runtime.scope("agent")
    scope.register(raw_tool("mine"))

    runtime.close()

    assert runtime.schemas() == []
    assert runtime.schemas("agent") == []
    with pytest.raises(RuntimeError, match="closed"):
        scope.register(raw_tool("late"))
    reopened = runtime.scope("agent")  # the key was released
    with pytest.raises(ValueError, match="known global tools: \\(none\\)"):
        reopened.restrict(deny=["deferred"])
    runtime.register(raw_tool("g"))
    result = await runtime.call("g", call_id="after-close")
    assert result.value == "ran:g"  # the old guard is gone
    assert seen == []  # and so is the old observer


@pytest.mark.parametrize("value", [0, -1, 1.5, 2.0, True, "10", None], ids=repr)
def test_construction_validates_max_parallel_sub_calls(value: Any) -> None:
    """P1: non-integer or < 1 → ``max_parallel_sub_calls must be a positive integer``."""
    with pytest.raises(ValueError) as raised:
        ToolRuntime(max_parallel_sub_calls=value)
    assert str(raised.value) == "max_parallel_sub_calls must be a positive integer"


def test_construction_defaults_and_validates_the_presentation_mode() -> None:
    """P1: ``mode`` ∈ native (default), code, both; ``max_parallel_sub_calls`` defaults to 10."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    assert runtime.mode == "native"
    assert runtime.mode_for() == "native"
    assert runtime.max_parallel_sub_calls == 10
    both = ToolRuntime(mode="both", max_parallel_sub_calls=1, code_runtime=FakeRuntime())
    assert both.mode_for("anyone") == "both"
    with pytest.raises(ValueError, match="mode"):
        ToolRuntime(mode="python", code_runtime=FakeRuntime())  # type: ignore[arg-type]
