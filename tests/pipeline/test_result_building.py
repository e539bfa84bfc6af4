"""Results, registration and output declarations (port of ``tools.spec.ts`` › ``ToolRuntime``).

Contract: §2.1 (data model), §2.2 R2/R3/R6 (registration, schemas), §2.8 (error/result table rows for
bodies, outputs and arguments), §2.11 S1 (success construction), §3.2 items 1–5 and 19.

Each test's docstring carries the upstream ``it(...)`` title it ports (or says it is a
Python-specific addition). Policy phases live in ``test_policy_stages.py``, cancellation in
``test_cancellation.py``, additional contexts and ``finalize_content`` in
``test_run_contexts.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import re
import threading
from fractions import Fraction
from typing import Any

import pytest

from helpers import (
    ECHO_OUTPUT,
    call_input,
    content_tool,
    echo_tool,
    failure,
    raising,
    returning,
    settle,
    text,
)
from toolrt import (
    AbortSignal,
    Accept,
    Block,
    JsonSchemaError,
    ToolDefinition,
    ToolExecutionInput,
    ToolFailure,
    ToolNotFoundError,
    ToolOutput,
    ToolrtError,
    ToolRuntime,
    ToolSuccess,
    define_tool,
)
from toolrt.lowlevel import ExecutionToken, FrozenDict, FrozenList, ToolErrorInfo

OUTPUT_ERROR = ("ToolOutputError", "INVALID_TOOL_OUTPUT")
ARGS_ERROR = ("ToolArgsError", "INVALID_ARGS")
NOT_LOSSLESS_ARGS = "tool execution arguments must be losslessly JSON-serializable"


class HostileList(list):
    """A list whose iteration raises: the Python analogue of upstream's throwing getter.

    ``snapshot_json`` must iterate a list subclass through its own ``__iter__``, so this is a value
    whose *inspection* fails with an ordinary exception (not a "not lossless" verdict).
    """

    def __init__(self, message: str) -> None:
        super().__init__([1])
        self.message = message

    def __iter__(self) -> Any:
        raise RuntimeError(self.message)


def raw_variant(definition: ToolDefinition, **changes: Any) -> ToolDefinition:
    """``{...definition, ...changes}``: a copy of a definition with some fields replaced."""
    return dataclasses.replace(definition, **changes)


# --- schemas and registration -------------------------------------------------------------------


def test_schemas_project_exactly_name_description_parameters_for_the_model(runtime: ToolRuntime) -> None:
    """registers tools, exposes schemas, and feeds the system-prompt assembly

    The system-prompt half (``ctx.systemPrompt.assemble().tools``) is not applicable: toolrt ships
    no system-prompt service; ``schemas()`` is the model-facing feed a prompt builder consumes.
    """
    runtime.register(echo_tool())

    schemas = runtime.schemas()

    assert schemas == [
        {
            "name": "echo",
            "description": "echo arguments back",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]
    assert "execute" not in schemas[0]
    assert [schema["name"] for schema in runtime.schemas()] == ["echo"]


def test_schemas_drop_every_host_callback(runtime: ToolRuntime) -> None:
    """schemas() drops host callbacks — they must never reach the model"""
    runtime.register(
        content_tool(
            name="present",
            description="has presenters",
            parameters={"x": {"type": "string", "required": True}},
            execute=returning([]),
            finalize_content=lambda _exec, result: result.content,
            present_call=lambda args: {"card": "generic", "title": args["x"]},
            present_result=lambda args, result: {"card": "generic", "title": args["x"]},
            is_concurrency_safe=lambda args: True,
        )
    )

    schema = runtime.schemas()[0]

    assert sorted(schema) == ["description", "name", "parameters"]
    assert type(schema) is dict


def test_schemas_exclude_the_timeout_budget(runtime: ToolRuntime) -> None:
    """schemas() excludes timeoutMs — the budget must never reach the model"""
    runtime.register(
        content_tool(
            name="budgeted", description="has a budget", timeout_ms=5_000, execute=returning(text("ok"))
        )
    )

    schema = next(schema for schema in runtime.schemas() if schema["name"] == "budgeted")

    assert "timeout_ms" not in schema
    assert "timeoutMs" not in schema
    assert runtime.get("budgeted").timeout_ms == 5_000  # type: ignore[union-attr]


def test_schemas_are_deep_copies_that_callers_may_mutate(runtime: ToolRuntime) -> None:
    """schemas() snapshots tool schemas instead of exposing registry objects"""
    runtime.register(echo_tool())

    first = runtime.schemas()
    first[0]["parameters"]["properties"]["mutated"] = {"type": "string"}
    first[0]["description"] = "mutated"

    assert runtime.schemas() == [
        {
            "name": "echo",
            "description": "echo arguments back",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]


def test_schemas_snapshot_deeply_nested_parameters_without_recursion(runtime: ToolRuntime) -> None:
    """schemas() snapshots deeply nested parameters without using structured-clone recursion"""
    depth = 5_000
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        nested = {"oneOf": [nested, {"type": "null"}]}
    runtime.register(
        raw_variant(
            echo_tool(), name="deep-schema", parameters={"type": "object", "properties": {"nested": nested}}
        )
    )

    projected = runtime.schemas()[0]["parameters"]

    cursor = projected["properties"]["nested"]
    layers = 0
    while "oneOf" in cursor:
        cursor = cursor["oneOf"][0]
        layers += 1
    assert layers == depth
    assert cursor == {"type": "string"}


def test_schema_projection_rejects_raw_parameters_that_are_not_lossless(runtime: ToolRuntime) -> None:
    """rejects schema projection when a raw registration is not lossless JSON

    Registration itself accepts the raw parameters (R2: parameters are not validated).
    """
    runtime.register(
        raw_variant(echo_tool(), name="lossy-schema", parameters={"type": "object", "default": math.nan})
    )

    with pytest.raises(
        TypeError,
        match=re.escape('tool "lossy-schema" parameters must be lossless JSON before schema projection'),
    ):
        runtime.schemas()


@pytest.mark.parametrize("timeout_ms", [0, -1, math.inf, math.nan, True])
def test_registration_rejects_a_non_positive_or_non_finite_timeout(
    runtime: ToolRuntime, timeout_ms: Any
) -> None:
    """rejects a non-positive or non-finite registration timeout

    Python wording names the Python field (``timeout_ms``), per decision 0001. ``True`` is a bool, not
    a number (pitfall 1).
    """
    definition = raw_variant(echo_tool(), name="bad-timeout", timeout_ms=timeout_ms)

    with pytest.raises(
        TypeError, match=re.escape('tool "bad-timeout" timeout_ms must be a positive finite number')
    ):
        runtime.register(definition)
    assert runtime.get("bad-timeout") is None


def test_registration_requires_a_canonical_output_declaration(runtime: ToolRuntime) -> None:
    """requires every raw registration to declare its canonical output"""

    async def execute(args: Any, ctx: Any) -> Any:
        return text("legacy")

    expected = re.escape(
        'tool "legacy-content-tool" must declare output { schema, render, presentation_meta? }'
    )
    missing = ToolDefinition(
        name="legacy-content-tool",
        description="missing output",
        parameters={},
        output=None,  # type: ignore[arg-type]
        execute=execute,
    )
    no_render = raw_variant(missing, output=ToolOutput(schema={"type": "string"}, render=None))  # type: ignore[arg-type]
    bad_meta = raw_variant(
        missing,
        output=ToolOutput(schema={"type": "string"}, presentation_meta="not callable"),  # type: ignore[arg-type]
    )

    for definition in (missing, no_render, bad_meta):
        with pytest.raises(TypeError, match=expected):
            runtime.register(definition)
    assert runtime.get("legacy-content-tool") is None


def test_registration_rejects_an_invalid_output_schema_naming_its_path(runtime: ToolRuntime) -> None:
    """Python-specific addition (R2 step 2): an unsupported raw output schema fails at register time.

    The error is a ``JsonSchemaError`` naming the offending path, and nothing is registered. The DSL
    (``define_tool``) reports its own author errors even earlier, at definition time.
    """
    definition = raw_variant(
        echo_tool(),
        name="bad-output-schema",
        output=ToolOutput(
            schema={"type": "object", "properties": {"x": {"type": "strng"}}},
            render=ECHO_OUTPUT["render"],
        ),
    )

    with pytest.raises(JsonSchemaError) as raised:
        runtime.register(definition)
    assert raised.value.violations == (
        "schema.properties.x.type must be one of object/array/string/number/integer/boolean/null",
    )
    assert runtime.get("bad-output-schema") is None
    assert runtime.schemas() == []

    with pytest.raises(
        JsonSchemaError, match=re.escape("schema.additionalProperties must be explicitly true")
    ):
        define_tool(
            name="bad-dsl-output",
            description="object without additionalProperties",
            parameters={},
            output={"schema": {"type": "object", "properties": {}}},  # type: ignore[typeddict-item]
            execute=returning({}),
        )


def test_duplicate_names_are_rejected_and_scoped_registrations_unregister(runtime: ToolRuntime) -> None:
    """rejects duplicate names and unregisters on fiber dispose (HMR safety)

    A Cordis fiber becomes a ``with`` block around the registration's disposer; ``runtime.close()``
    undoes every remaining global registration (the runtime is the outermost fiber).
    """
    runtime.register(echo_tool())
    with pytest.raises(ValueError, match='tool "echo" is already registered'):
        runtime.register(echo_tool())

    with runtime.register(echo_tool(name="scoped")):
        assert [schema["name"] for schema in runtime.schemas()] == ["echo", "scoped"]
    assert [schema["name"] for schema in runtime.schemas()] == ["echo"]

    runtime.close()
    assert runtime.schemas() == []


def test_register_returns_a_callable_disposer_that_unregisters(runtime: ToolRuntime) -> None:
    """returns a callable disposer from register() that unregisters the tool"""
    runtime.register(echo_tool())
    dispose = runtime.register(echo_tool(name="disposable"))
    assert [schema["name"] for schema in runtime.schemas()] == ["echo", "disposable"]

    dispose()
    dispose()  # idempotent

    assert [schema["name"] for schema in runtime.schemas()] == ["echo"]
    assert dispose.disposed


def test_a_throwing_change_listener_rolls_the_registration_back(runtime: ToolRuntime) -> None:
    """rolls back the tool entry when a tools/change listener throws (P1-1)"""
    threw = False

    def on_change(change: Any) -> None:
        nonlocal threw
        if not threw:
            threw = True
            raise RuntimeError("boom change listener")

    runtime.on("tools/change", on_change)

    with pytest.raises(RuntimeError, match="boom change listener"):
        runtime.register(echo_tool())
    assert runtime.get("echo") is None
    assert runtime.schemas() == []

    dispose = runtime.register(echo_tool())
    assert [schema["name"] for schema in runtime.schemas()] == ["echo"]
    dispose()
    assert runtime.get("echo") is None


def test_scope_teardown_runs_the_exact_registration_disposers_newest_first(runtime: ToolRuntime) -> None:
    """register() returns the EXACT effect disposer: a composite yield nests the teardown in order

    Cordis effects do not exist in Python; the equivalent contract is that ``scope.close()`` runs
    the very disposers ``register`` returned, newest first (LIFO), and skips one already called.
    """
    changes: list[tuple[str, str | None]] = []
    runtime.on("tools/change", lambda change: changes.append((change.kind, change.name)))
    scope = runtime.scope("agent-a")
    first = scope.register(echo_tool(name="first"))
    scope.register(echo_tool(name="second"))
    third = scope.register(echo_tool(name="third"))
    third()
    changes.clear()

    scope.close()

    assert changes == [("unregister", "second"), ("unregister", "first")]
    assert first.disposed
    assert runtime.get("first", "agent-a") is None


# --- successes and output projections -----------------------------------------------------------


async def test_executes_a_tool_and_returns_its_frozen_content(runtime: ToolRuntime) -> None:
    """executes a tool and returns its content

    Python is stricter than ``toEqual``: observers receive the very object the caller gets (E24).
    """
    runtime.register(echo_tool())
    observed: list[Any] = []
    runtime.on("tools/result", lambda _exec, result: observed.append(result))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == ToolSuccess(value="hi", content=text("hi"))
    assert result.meta is None
    assert result.additional_contexts == ()
    assert result.concludes_turn is False
    assert observed == [result]
    assert observed[0] is result
    assert isinstance(result.content, FrozenList)
    with pytest.raises(TypeError):
        result.content.append({"type": "text", "text": "more"})
    with pytest.raises(TypeError):
        result.content[0]["text"] = "changed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.value = "changed"  # type: ignore[misc]


async def test_presentation_meta_is_projected_from_the_canonical_value(runtime: ToolRuntime) -> None:
    """projects presentation metadata from the canonical value"""
    runtime.register(
        echo_tool(
            name="meta-tool",
            output={
                **ECHO_OUTPUT,
                "presentation_meta": lambda _args, _value: {
                    "diffs": [{"path": "a", "oldText": None, "newText": "x"}]
                },
            },
            execute=returning("ok"),
        )
    )

    result = await runtime.execute(call_input("meta-tool"))

    assert result == ToolSuccess(
        value="ok", content=text("ok"), meta={"diffs": [{"path": "a", "oldText": None, "newText": "x"}]}
    )
    assert isinstance(result.meta, FrozenDict)
    with pytest.raises(TypeError):
        result.meta["diffs"] = []


async def test_meta_is_absent_without_a_presentation_projector(runtime: ToolRuntime) -> None:
    """omits meta when no presentation projector is declared"""
    runtime.register(echo_tool(name="no-meta-tool", execute=returning("ok")))

    result = await runtime.execute(call_input("no-meta-tool"))

    assert result == ToolSuccess(value="ok", content=text("ok"))
    assert result.meta is None


async def test_nested_dispatches_never_compute_presentation_meta(runtime: ToolRuntime) -> None:
    """suppresses presentation metadata only for nested composite dispatches"""
    runtime.register(
        echo_tool(
            name="meta-suppression",
            output={**ECHO_OUTPUT, "presentation_meta": lambda _a, _v: {"card": True}},
        )
    )

    direct = await runtime.execute(call_input("meta-suppression", call_id="direct"))
    nested = await runtime.execute(call_input("meta-suppression", call_id="nested", parent=ExecutionToken()))

    assert direct.meta == {"card": True}
    assert nested.meta is None
    assert isinstance(nested, ToolSuccess)
    assert nested.value == ""


async def test_a_nested_conclusion_rides_on_the_nested_success_only(runtime: ToolRuntime) -> None:
    """carries a nested conclusion on the nested result for its composite to forward"""

    async def terminal(args: Any, ctx: Any) -> str:
        ctx.conclude_turn()
        return "terminal"

    runtime.register(echo_tool(name="terminal-nested", execute=terminal))
    calls = 0

    async def composite(args: Any, ctx: Any) -> str:
        nonlocal calls
        calls += 1
        nested = await runtime.execute(
            call_input("terminal-nested", call_id=f"nested-{calls}", signal=ctx.signal, parent=ctx.token)
        )
        if getattr(nested, "concludes_turn", False):
            ctx.conclude_turn()
        return "nested failed, composite recovered" if nested.is_error else "nested succeeded"

    runtime.register(echo_tool(name="composite", execute=composite))

    async def veto(execution: Any, result: Any, next: Any) -> Any:
        if execution.name != "terminal-nested":
            return await next()
        return Block(text("nested success rejected"))

    dispose_veto = runtime.on("tools/post-execute", veto)
    recovered = await runtime.execute(call_input("composite", call_id="composite-vetoed"))
    assert recovered == ToolSuccess(
        value="nested failed, composite recovered", content=text("nested failed, composite recovered")
    )
    assert recovered.concludes_turn is False
    dispose_veto()

    concluded = await runtime.execute(call_input("composite", call_id="composite-ok"))
    assert isinstance(concluded, ToolSuccess)
    assert concluded.concludes_turn is True
    direct = await runtime.execute(call_input("terminal-nested", call_id="direct"))
    assert isinstance(direct, ToolSuccess)
    assert direct.concludes_turn is True


async def test_a_failed_call_never_concludes_the_turn(runtime: ToolRuntime) -> None:
    """Python-specific addition (D5): ``conclude_turn()`` marks only a *successful* result."""

    async def conclude_then_fail(args: Any, ctx: Any) -> str:
        ctx.conclude_turn()
        raise RuntimeError("failed after concluding")

    runtime.register(echo_tool(name="conclude-fail", execute=conclude_then_fail))

    result = await runtime.execute(call_input("conclude-fail"))

    assert result == failure("failed after concluding")
    assert not hasattr(result, "concludes_turn")


# --- invalid output -----------------------------------------------------------------------------


async def test_non_cloneable_meta_is_normalized_before_final_notification(runtime: ToolRuntime) -> None:
    """normalizes a contract-violating non-cloneable result before final notification"""
    observed: list[bool] = []
    runtime.on("tools/result", lambda _exec, result: observed.append(result.is_error))
    runtime.register(
        echo_tool(
            name="bad-meta",
            output={**ECHO_OUTPUT, "presentation_meta": lambda _a, _v: lambda: None},
            execute=returning("ok"),
        )
    )

    result = await runtime.execute(call_input("bad-meta", call_id="bad-meta"))

    assert isinstance(result, ToolFailure)
    assert result.content[0]["text"].startswith("Error:")
    assert result.error.info == ToolErrorInfo(*OUTPUT_ERROR)
    assert observed == [True]


async def test_lossy_and_schema_mismatched_values_fail_before_post_execute(runtime: ToolRuntime) -> None:
    """rejects lossy and schema-mismatched body values before post-execute

    Post-execute still runs (table: "yes"), but it already sees the validation failure.
    """
    runtime.register(
        define_tool(
            name="lossy-output",
            description="lossy",
            parameters={},
            output={"schema": {"type": "json"}, "render": lambda _a, _v: []},
            execute=returning(lambda: None),
        )
    )
    runtime.register(
        define_tool(
            name="wrong-output",
            description="wrong schema",
            parameters={},
            output={"schema": {"type": "string"}, "render": lambda _a, _v: []},
            execute=returning(42),
        )
    )
    post_saw: list[Any] = []

    async def post(execution: Any, result: Any, next: Any) -> Any:
        post_saw.append(result)
        return await next()

    runtime.on("tools/post-execute", post)

    lossy = await runtime.execute(call_input("lossy-output", call_id="lossy"))
    mismatch = await runtime.execute(call_input("wrong-output", call_id="mismatch"))

    assert lossy == failure(
        'tool "lossy-output" returned invalid output: value: function is not a JSON type', *OUTPUT_ERROR
    )
    assert mismatch == failure(
        'tool "wrong-output" returned invalid output: "value" must be a string', *OUTPUT_ERROR
    )
    assert post_saw == [lossy, mismatch]
    assert not hasattr(lossy, "value")


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (math.nan, "value: NaN and infinities are not JSON numbers"),
        (math.inf, "value: NaN and infinities are not JSON numbers"),
        (-math.inf, "value: NaN and infinities are not JSON numbers"),
        ({"delta": -0.0}, "value.delta: -0.0 is not lossless JSON (it reads back as 0)"),
        (2**53 + 1, "value: integer is not exactly representable as a JSON number"),
        ({1: "int key"}, "value: object key 1 is not a string"),
        ({"a": {1, 2}}, "value.a: set is not a JSON type"),
        (b"bytes", "value: bytes is not a JSON type"),
        (object(), "value: object is not a JSON type"),
        ({"result": [Fraction(2)]}, "value.result[0]: fractions.Fraction is not a JSON type"),
    ],
    ids=["nan", "inf", "-inf", "-0.0", "unsafe-int", "int-key", "set", "bytes", "object", "fraction"],
)
async def test_a_non_lossless_body_value_is_invalid_tool_output(
    runtime: ToolRuntime, value: Any, detail: str
) -> None:
    """Python-specific addition (D15, pitfall 1): Python values JSON cannot carry losslessly.

    Issue 13: the message names the path and the offending Python type (it used to say only
    "value is not lossless JSON")."""
    runtime.register(
        define_tool(
            name="lossy",
            description="lossy",
            parameters={},
            output={"schema": {"type": "json"}},
            execute=returning(value),
        )
    )

    result = await runtime.execute(call_input("lossy"))

    assert result == failure(f'tool "lossy" returned invalid output: {detail}', *OUTPUT_ERROR)


async def test_a_value_violating_an_object_schema_lists_every_violation(runtime: ToolRuntime) -> None:
    """Python-specific addition (table: output schema violations joined by ``'; '``, rooted at ``value``)."""
    runtime.register(
        define_tool(
            name="object-output",
            description="closed object",
            parameters={},
            output={
                "schema": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"a": {"type": "string", "required": True}},
                }
            },
            execute=returning({"b": 1}),
        )
    )

    result = await runtime.execute(call_input("object-output"))

    assert result == failure(
        'tool "object-output" returned invalid output: missing required property "value.a"; '
        '"value.b" is not a declared property (additionalProperties: false)',
        *OUTPUT_ERROR,
    )


async def test_a_throwing_body_value_snapshot_is_invalid_tool_output(runtime: ToolRuntime) -> None:
    """classifies a throwing body snapshot as invalid tool output"""
    runtime.register(
        define_tool(
            name="hostile-body",
            description="hostile body",
            parameters={},
            output={"schema": {"type": "json"}, "render": lambda _a, _v: []},
            execute=returning(HostileList("body snapshot getter exploded")),
        )
    )

    result = await runtime.execute(call_input("hostile-body", call_id="hostile-body"))

    assert result == failure(
        'tool "hostile-body" returned invalid output: value snapshot failed: body snapshot getter exploded',
        *OUTPUT_ERROR,
    )


def _projector_tool(name: str, failing: str, failure_value: Any) -> ToolDefinition:
    def render(_args: Any, _value: Any) -> Any:
        if failing == "render":
            return failure_value()
        return text("ok")

    def presentation_meta(_args: Any, _value: Any) -> Any:
        if failing == "presentation_meta":
            return failure_value()
        return None

    return define_tool(
        name=name,
        description=failing,
        parameters={},
        output={"schema": {"type": "string"}, "render": render, "presentation_meta": presentation_meta},
        execute=returning("ok"),
    )


@pytest.mark.parametrize("projector", ["render", "presentation_meta"])
async def test_a_throwing_output_projector_is_one_failed_call(runtime: ToolRuntime, projector: str) -> None:
    """contains a throwing output.%s projector as one failed call"""
    message = "renderer exploded" if projector == "render" else "metadata exploded"

    def explode() -> Any:
        raise RuntimeError(message)

    runtime.register(_projector_tool(f"throwing-{projector}", projector, explode))

    result = await runtime.execute(call_input(f"throwing-{projector}"))

    assert isinstance(result, ToolFailure)
    assert message in result.error.message
    assert result.error.info == ToolErrorInfo(*OUTPUT_ERROR)
    assert not hasattr(result, "value")


@pytest.mark.parametrize("projector", ["render", "presentation_meta"])
async def test_a_throwing_output_projector_snapshot_is_one_failed_call(
    runtime: ToolRuntime, projector: str
) -> None:
    """contains a throwing output.%s snapshot as one failed call"""
    runtime.register(
        _projector_tool(f"hostile-{projector}", projector, lambda: HostileList("snapshot getter exploded"))
    )

    result = await runtime.execute(call_input(f"hostile-{projector}"))

    assert isinstance(result, ToolFailure)
    assert "snapshot getter exploded" in result.error.message
    assert result.error.info == ToolErrorInfo(*OUTPUT_ERROR)


@pytest.mark.parametrize(
    ("projector", "upstream_label"),
    [
        ("render", "render"),
        pytest.param(
            "presentation_meta",
            "presentationMeta",
        ),
    ],
)
async def test_projector_failures_read_exactly_as_upstream(
    runtime: ToolRuntime, projector: str, upstream_label: str
) -> None:
    """Python-specific addition: the exact model-facing text of the projector rows of §2.8's table.

    ``… returned invalid output: output.<p> failed: <msg>`` and ``… output.<p> returned non-lossless
    JSON``. ADR 0001 makes every ``Error: ...`` text byte-identical to upstream, so ``<p>`` is the
    upstream name (``render`` / ``presentationMeta``), not the Python field name.
    """

    def explode() -> Any:
        raise RuntimeError("exploded")

    runtime.register(_projector_tool("throws", projector, explode))
    runtime.register(_projector_tool("lossy", projector, lambda: [{"type": "text", "text": math.nan}]))

    thrown = await runtime.execute(call_input("throws"))
    lossy = await runtime.execute(call_input("lossy"))

    assert thrown == failure(
        f'tool "throws" returned invalid output: output.{upstream_label} failed: exploded', *OUTPUT_ERROR
    )
    assert lossy == failure(
        f'tool "lossy" returned invalid output: output.{upstream_label} returned non-lossless JSON',
        *OUTPUT_ERROR,
    )


# --- failures -----------------------------------------------------------------------------------


async def test_unknown_and_throwing_tools_return_error_results(runtime: ToolRuntime) -> None:
    """returns isError results for unknown tools and throwing tools"""
    runtime.register(echo_tool(name="boom", execute=raising(RuntimeError("exploded"))))

    unknown = await runtime.execute(call_input("nope"))
    thrown = await runtime.execute(call_input("boom", call_id="c2"))

    assert unknown == failure('unknown tool "nope"', "ToolNotFoundError", "UNKNOWN_TOOL")
    assert thrown == failure("exploded")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (Exception("kaboom"), failure("kaboom")),
        (ToolrtError("disk full", "ENOSPC"), failure("disk full", "ToolrtError", "ENOSPC")),
        (ValueError(), failure("ValueError")),
        (KeyError("missing"), failure("'missing'")),
    ],
    ids=["plain", "harness-error", "empty-message", "key-error"],
)
async def test_raised_errors_become_their_message(
    runtime: ToolRuntime, error: Exception, expected: Any
) -> None:
    """Python adaptation of §3.2 item 4's "related" throws (``throw 'kaboom'`` → ``Error: kaboom``).

    Python can only raise exceptions: the message is ``str(error)``, the class name when that is
    empty; ``info`` only for a ``ToolrtError``. (``throw {code: 500}`` has no Python analogue.)
    """
    runtime.register(echo_tool(name="raiser", execute=raising(error)))

    assert await runtime.execute(call_input("raiser")) == expected


async def test_a_hostile_raised_value_is_normalized_as_unprintable(runtime: ToolRuntime) -> None:
    """normalizes a hostile thrown value whose inspection and coercion both throw"""

    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("str trap")

        def __repr__(self) -> str:
            raise RuntimeError("repr trap")

    class NotAString(Exception):
        def __str__(self) -> Any:
            return 42  # noqa: PLE0307 - deliberately hostile

    runtime.register(echo_tool(name="hostile-throw", execute=raising(Hostile())))
    runtime.register(echo_tool(name="bad-str", execute=raising(NotAString())))

    assert await runtime.execute(call_input("hostile-throw")) == failure("<unprintable thrown value>")
    assert await runtime.execute(call_input("bad-str")) == failure("<unprintable thrown value>")


@pytest.mark.parametrize(
    ("error", "message", "raw_body"),
    [
        pytest.param(KeyboardInterrupt(), "KeyboardInterrupt", False, id="KeyboardInterrupt-async"),
        pytest.param(KeyboardInterrupt(), "KeyboardInterrupt", True, id="KeyboardInterrupt-sync-thread"),
        pytest.param(SystemExit("bye"), "bye", False, id="SystemExit-async"),
        pytest.param(SystemExit("bye"), "bye", True, id="SystemExit-sync-thread"),
        pytest.param(GeneratorExit(), "GeneratorExit", False, id="GeneratorExit-async"),
        pytest.param(GeneratorExit(), "GeneratorExit", True, id="GeneratorExit-sync-thread"),
    ],
)
async def test_a_body_raising_a_base_exception_is_a_failed_call(
    runtime: ToolRuntime, error: BaseException, message: str, raw_body: bool
) -> None:
    """Python-specific (ADR 0001 "BaseException"): a non-cancellation ``BaseException`` from a body
    is a failed call result, not a crashed agent — for async bodies and for sync bodies on a thread.
    """
    if raw_body:

        def execute(args: Any, ctx: Any) -> Any:
            raise error

    else:
        execute = raising(error)
    runtime.register(echo_tool(name="base-raiser", execute=execute))
    observed: list[Any] = []
    runtime.on("tools/result", lambda _exec, result: observed.append(result))

    result = await settle(runtime.execute(call_input("base-raiser")))

    assert result == failure(message)
    assert observed == [result]


def test_tool_not_found_error_carries_a_stable_name_and_code() -> None:
    """ToolNotFoundError carries a stable message and code

    Python API choice: the constructor takes the full message (as ``toolrt._errors`` defines it);
    the stable ``unknown tool "<name>"`` message is produced by the pipeline — see
    ``test_unknown_and_throwing_tools_return_error_results``.
    """
    error = ToolNotFoundError('unknown tool "ghost"')

    assert isinstance(error, ToolrtError)
    assert error.name == "ToolNotFoundError"
    assert error.code == "UNKNOWN_TOOL"
    assert error.message == 'unknown tool "ghost"'
    assert str(error) == 'unknown tool "ghost"'


# --- sync bodies ----------------------------------------------------------------------------------


async def test_a_plain_function_body_runs_on_a_worker_thread(runtime: ToolRuntime) -> None:
    """Python-specific (ADR 0001 "Sync bodies"): a plain body runs off the event-loop thread with the
    caller's context variables; ``run_inline=True`` keeps it on the loop thread.
    """
    import contextvars

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    seen: dict[str, Any] = {}

    def threaded(args: Any, ctx: Any) -> str:
        seen["threaded"] = threading.get_ident()
        seen["marker"] = marker.get()
        return "threaded"

    def inline(args: Any, ctx: Any) -> str:
        seen["inline"] = threading.get_ident()
        return "inline"

    runtime.register(echo_tool(name="threaded", execute=threaded))
    runtime.register(echo_tool(name="inline", execute=inline, run_inline=True))
    marker.set("from caller")

    assert await runtime.execute(call_input("threaded")) == ToolSuccess(
        value="threaded", content=text("threaded")
    )
    assert await runtime.execute(call_input("inline")) == ToolSuccess(value="inline", content=text("inline"))
    assert seen["threaded"] != threading.get_ident()
    assert seen["inline"] == threading.get_ident()
    assert seen["marker"] == "from caller"


# --- arguments ------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ["a string", ["a", "list"], None, 1, True], ids=repr)
async def test_non_object_arguments_fail_define_tool_validation(runtime: ToolRuntime, arguments: Any) -> None:
    """Python-specific bad input (S-DSL4/S-DSL5): a lossless but non-object argument value reaches the
    ``define_tool`` validator and fails as one ``INVALID_ARGS`` result; the body never runs, and
    post-execute still runs (table: "yes").
    """
    ran: list[Any] = []
    runtime.register(echo_tool(execute=lambda args, ctx: ran.append(args) or ""))
    post_saw: list[Any] = []

    async def post(execution: Any, result: Any, next: Any) -> Any:
        post_saw.append(result)
        return await next()

    runtime.on("tools/post-execute", post)

    result = await runtime.execute(call_input("echo", arguments))

    assert result == failure('invalid arguments: "arguments" must be an object', *ARGS_ERROR)
    assert ran == []
    assert post_saw == [result]


async def test_invalid_arguments_report_every_violation(runtime: ToolRuntime) -> None:
    """Python-specific bad input (table row "defineTool arg validation"): ``invalid arguments: v1; v2``."""
    runtime.register(
        define_tool(
            name="typed",
            description="typed",
            parameters={"path": {"type": "string", "required": True}, "limit": {"type": "integer"}},
            output={"schema": {"type": "string"}},
            execute=returning("never"),
        )
    )

    result = await runtime.execute(call_input("typed", {"limit": 1.5}))

    assert result == failure(
        'invalid arguments: missing required property "path"; "limit" must be an integer', *ARGS_ERROR
    )


def _cyclic_dict() -> dict[str, Any]:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    return cycle


def _cyclic_list() -> dict[str, Any]:
    cycle: list[Any] = []
    cycle.append(cycle)
    return {"v": cycle}


@pytest.mark.parametrize(
    "arguments",
    [
        {"v": math.nan},
        {"v": math.inf},
        {"v": -math.inf},
        {"v": -0.0},
        {"v": {1: "int key"}},
        {1: "top-level int key"},
        {"v": 2**53 + 1},
        {"v": {1, 2}},
        {"v": b"bytes"},
        {"v": object()},
        _cyclic_dict(),
        _cyclic_list(),
        math.nan,
    ],
    ids=[
        "nan",
        "inf",
        "-inf",
        "-0.0",
        "nested-int-key",
        "int-key",
        "unsafe-int",
        "set",
        "bytes",
        "object",
        "dict-cycle",
        "list-cycle",
        "top-level-nan",
    ],
)
async def test_non_lossless_arguments_fail_before_policy_and_dispatch(
    runtime: ToolRuntime, arguments: Any
) -> None:
    """Python-specific bad input (E3; scoped.spec "rejects cloneable non-JSON arguments … before policy
    or dispatch"): exactly one ``tools/result``, whose execution has no arguments; no pre-execute,
    no guard, no wrapper, no body, no post-execute.
    """
    phases = {"pre": 0, "guard": 0, "around": 0, "body": 0, "post": 0}
    observed: list[tuple[Any, Any]] = []

    def body(args: Any, ctx: Any) -> str:
        phases["body"] += 1
        return ""

    async def pre(execution: Any, next: Any) -> Any:
        phases["pre"] += 1
        return await next()

    async def around(execution: Any, next: Any) -> Any:
        phases["around"] += 1
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        phases["post"] += 1
        return await next()

    def guard(execution: Any) -> None:
        phases["guard"] += 1

    runtime.register(echo_tool(execute=body))
    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/execute", around)
    runtime.on("tools/post-execute", post)
    runtime.guard(guard)
    runtime.on("tools/result", lambda execution, result: observed.append((execution, result)))

    result = await runtime.execute(call_input("echo", arguments))

    assert result == failure(NOT_LOSSLESS_ARGS)
    assert phases == {"pre": 0, "guard": 0, "around": 0, "body": 0, "post": 0}
    assert len(observed) == 1
    assert observed[0][1] is result
    assert observed[0][0].arguments is None


async def test_siblings_sharing_one_object_are_not_a_cycle(runtime: ToolRuntime) -> None:
    """Python-specific (D15): only ancestors count as a cycle; a shared sibling is fine."""
    runtime.register(content_tool(name="shared", execute=lambda args, ctx: [args["a"], args["b"]]))
    shared = {"type": "text", "text": "same"}

    result = await runtime.execute(call_input("shared", {"a": shared, "b": shared}))

    assert result == ToolSuccess(value=[shared, shared], content=[shared, shared])


async def test_an_argument_snapshot_that_raises_fails_with_that_error(runtime: ToolRuntime) -> None:
    """Python-specific (E3 "if a getter throws → that error"): an argument whose inspection raises."""
    ran: list[Any] = []
    runtime.register(echo_tool(execute=lambda args, ctx: ran.append(args) or ""))

    result = await runtime.execute(call_input("echo", {"v": HostileList("argument getter exploded")}))

    assert result == failure("argument getter exploded")
    assert ran == []


@pytest.mark.parametrize("container", ["list", "dict"])
async def test_a_100000_deep_argument_value_snapshots_without_recursion(
    runtime: ToolRuntime, container: str
) -> None:
    """Python-specific bad input (D15 "iterative, no recursion limit"): a 100,000-deep argument value
    is snapshotted, validated, handed to the body frozen, and a 100,000-deep value comes back.
    """
    depth = 100_000
    deep: Any = "leaf"
    for _ in range(depth):
        deep = [deep] if container == "list" else {"d": deep}

    def walk(value: Any) -> tuple[int, bool]:
        layers, frozen = 0, True
        while isinstance(value, list | dict):
            frozen = frozen and isinstance(value, FrozenList | FrozenDict)
            value = value[0] if isinstance(value, list) else value["d"]
            layers += 1
        return layers, frozen

    async def execute(args: Any, ctx: Any) -> Any:
        layers, frozen = walk(args["deep"])
        assert frozen
        rebuilt: Any = "leaf"
        for _ in range(layers):
            rebuilt = [rebuilt]
        return rebuilt

    runtime.register(
        define_tool(
            name="deep",
            description="deep",
            parameters={"deep": {"type": "json", "required": True}},
            output={"schema": {"type": "json"}, "render": lambda _a, _v: text("deep")},
            execute=execute,
        )
    )
    pre_saw: list[Any] = []

    async def pre(execution: Any, next: Any) -> Any:
        pre_saw.append(walk(execution.arguments["deep"]))
        return await next()

    runtime.on("tools/pre-execute", pre)

    result = await settle(runtime.execute(call_input("deep", {"deep": deep})), timeout=60)

    assert isinstance(result, ToolSuccess), result.error if isinstance(result, ToolFailure) else None
    assert result.content == text("deep")
    assert walk(result.value) == (depth, True)
    assert pre_saw == [(depth, True)]


# --- observers ------------------------------------------------------------------------------------


async def test_failing_result_observers_are_contained_and_logged(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """Python-specific (E24; scoped.spec "notifies every tools/result observer…"): a raising sync
    observer and a raising async observer are logged, every other observer still gets the result,
    and the caller gets its result.
    """
    runtime.register(echo_tool())
    seen: list[str] = []

    def sync_broken(execution: Any, result: Any) -> None:
        raise RuntimeError("sync observer broke")

    async def async_broken(execution: Any, result: Any) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("async observer broke")

    runtime.on("tools/result", lambda _e, _r: seen.append("first"))
    runtime.on("tools/result", sync_broken)
    runtime.on("tools/result", async_broken)
    runtime.on("tools/result", lambda _e, _r: seen.append("last"))

    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.execute(call_input("echo", {"text": "hi"}))
        for _ in range(10):
            await asyncio.sleep(0)

    assert result == ToolSuccess(value="hi", content=text("hi"))
    assert seen == ["first", "last"]
    assert [record.getMessage() for record in caplog.records if record.name == "toolrt"] == [
        'tool "echo" (c1): tools/result observer failed: sync observer broke',
        'tool "echo" (c1): tools/result observer failed: async observer broke',
    ]


async def test_the_published_execution_is_frozen(runtime: ToolRuntime) -> None:
    """Python-specific (E24 ``Object.freeze(exec)``; D4): after publication the execution is final."""
    runtime.register(echo_tool())
    published: list[Any] = []
    runtime.on("tools/result", lambda execution, _result: published.append(execution))
    caller = {"text": "hi", "nested": {"k": [1]}}

    await runtime.execute(
        ToolExecutionInput(call_id="c1", name="echo", arguments=caller, signal=AbortSignal.never())
    )

    (execution,) = published
    assert execution.frozen
    assert execution.call_id == "c1"
    assert execution.root_call_id == "c1"
    assert execution.arguments == caller
    assert execution.arguments is not caller
    with pytest.raises(TypeError):
        execution.arguments["text"] = "changed"
    with pytest.raises(TypeError):
        execution.arguments["nested"]["k"].append(2)
    caller["text"] = "caller may still mutate its own object"
    assert execution.arguments["text"] == "hi"
    with pytest.raises(AttributeError):
        execution.signal = AbortSignal.never()
    with pytest.raises(AttributeError):
        execution.name = "renamed"
    with pytest.raises(RuntimeError):
        execution.defer_context({"id": "late", "role": "user", "content": text("late")})
    with pytest.raises(RuntimeError):
        execution.conclude_turn()


async def test_an_empty_accept_is_the_identity(runtime: ToolRuntime) -> None:
    """Python-specific smoke test that a post-execute ``Accept()`` with nothing set is the identity."""
    runtime.register(echo_tool())

    async def post(execution: Any, result: Any, next: Any) -> Any:
        await next()
        return Accept()

    runtime.on("tools/post-execute", post)

    assert await runtime.execute(call_input("echo", {"text": "x"})) == ToolSuccess(
        value="x", content=text("x")
    )
