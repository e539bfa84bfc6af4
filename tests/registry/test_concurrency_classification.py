"""``ToolRuntime.execution_mode`` (contract §2.6 M1–M2; port of upstream ``execution-mode.spec.ts``).

Python shape: ``ToolExecutionMode`` (``{kind:'parallel'} | {kind:'exclusive'}``) is the string
literal type ``ExecutionMode = Literal["parallel", "exclusive"]``.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest

from code_mode_fakes import FakeRuntime
from helpers import raw_tool
from toolrt import AbortSignal, ExecutionMode, ToolDefinition, ToolExecutionInput, ToolRuntime, define_tool
from toolrt.lowlevel import ExecutionToken


def classified_tool(name: str, classifier: Any = None) -> ToolDefinition:
    return raw_tool(name, is_concurrency_safe=classifier)


def mode_fixture(classifier: Any) -> ToolDefinition:
    """The ``defineContentToolFixture`` analogue: a DSL tool that requires ``mode``."""
    return define_tool(
        name="fixture",
        description="requires a mode",
        parameters={"mode": {"type": "string", "enum": ["read", "write"], "required": True}},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: args["mode"],
        is_concurrency_safe=classifier,
        run_inline=True,
    )


def call(name: str, arguments: Any = None, **fields: Any) -> ToolExecutionInput:
    return ToolExecutionInput(
        call_id="c1",
        name=name,
        arguments={} if arguments is None else arguments,
        signal=AbortSignal(),
        **fields,
    )


def test_returns_parallel_only_for_an_explicit_true_classifier() -> None:
    """returns parallel only for an explicit true classifier."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("safe", lambda args: True))

    assert runtime.execution_mode(call("safe")) == "parallel"


def test_defaults_to_exclusive_for_a_tool_with_no_classifier() -> None:
    """defaults to exclusive for a tool with no isConcurrencySafe declaration."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("plain"))

    assert runtime.execution_mode(call("plain")) == "exclusive"


def test_returns_exclusive_for_an_unknown_tool() -> None:
    """returns exclusive for an unknown tool."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())

    assert runtime.execution_mode(call("nope")) == "exclusive"


def test_returns_exclusive_when_the_classifier_returns_false_for_these_args() -> None:
    """returns exclusive when the classifier returns false for these args."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("rw", lambda args: args.get("mode") == "read"))

    assert runtime.execution_mode(call("rw", {"mode": "read"})) == "parallel"
    assert runtime.execution_mode(call("rw", {"mode": "write"})) == "exclusive"


def test_classifies_invalid_define_tool_arguments_as_exclusive_without_throwing() -> None:
    """classifies invalid defineContentToolFixture arguments as exclusive without throwing."""
    seen: list[Any] = []

    def classifier(args: Any) -> bool:
        seen.append(args)
        return args["mode"] == "read"  # would raise KeyError on {}

    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(mode_fixture(classifier))

    assert runtime.execution_mode(call("fixture", {})) == "exclusive"
    assert runtime.execution_mode(call("fixture", {"mode": "delete"})) == "exclusive"
    assert runtime.execution_mode(call("fixture", "not an object")) == "exclusive"
    assert seen == []  # invalid arguments never reach the author's classifier
    assert runtime.execution_mode(call("fixture", {"mode": "read"})) == "parallel"
    assert runtime.execution_mode(call("fixture", {"mode": "write"})) == "exclusive"


def test_treats_a_throwing_raw_classifier_as_exclusive() -> None:
    """treats a throwing raw classifier as exclusive."""

    def explode(args: Any) -> bool:
        raise RuntimeError("classifier exploded")

    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("fragile", explode))

    assert runtime.execution_mode(call("fragile")) == "exclusive"


@pytest.mark.parametrize("truthy", ["yes", 1, 1.0, [True], {"parallel": True}], ids=repr)
def test_treats_a_truthy_non_boolean_raw_result_as_exclusive(truthy: Any) -> None:
    """treats a truthy non-boolean raw result as exclusive (only exactly ``True`` is parallel)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("sloppy", lambda args: truthy))

    assert runtime.execution_mode(call("sloppy")) == "exclusive"


def test_passes_parsed_arguments_directly_to_a_raw_definition() -> None:
    """passes parsed arguments directly to a raw definition (raw, not snapshotted)."""
    received: list[Any] = []

    def classifier(args: Any) -> bool:
        received.append(args)
        return True

    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("raw", classifier))
    arguments = {"anything": 1}

    assert runtime.execution_mode(call("raw", arguments)) == "parallel"
    assert len(received) == 1
    assert received[0] is arguments


def test_is_concurrency_safe_never_reaches_the_model_facing_schemas() -> None:
    """isConcurrencySafe never reaches the model-facing schemas() projection."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("safe", lambda args: True))
    runtime.register(mode_fixture(lambda args: True))

    for schema in runtime.schemas():
        assert sorted(schema) == ["description", "name", "parameters"]
        assert "concurrency" not in repr(schema).lower()


def test_execution_mode_is_a_two_valued_literal() -> None:
    """ToolExecutionMode is the object-tagged union (Python: ``Literal["parallel", "exclusive"]``)."""
    assert typing.get_args(ExecutionMode) == ("parallel", "exclusive")
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("safe", lambda args: True))
    runtime.register(classified_tool("plain"))
    modes = {runtime.execution_mode(call("safe")), runtime.execution_mode(call("plain"))}
    assert modes == set(typing.get_args(ExecutionMode))


def test_classifies_through_the_callers_scope_view() -> None:
    """M1: resolution goes through the caller's view (a restricted-away tool is unknown → exclusive)."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("safe", lambda args: True))
    scope = runtime.scope("agent")
    own = runtime.scope("owner")
    own.register(classified_tool("mine", lambda args: True))
    scope.restrict(deny=["safe"])

    assert runtime.execution_mode(call("safe", agent="agent")) == "exclusive"
    assert runtime.execution_mode(call("safe", agent="owner")) == "parallel"
    assert runtime.execution_mode(call("mine", agent="owner")) == "parallel"
    assert runtime.execution_mode(call("mine", agent="agent")) == "exclusive"
    assert runtime.execution_mode(call("mine")) == "exclusive"


def test_a_model_direct_call_under_code_mode_is_exclusive() -> None:
    """M2: under effective mode ``code`` a direct (no ``parent``) non-run_code call is exclusive.

    SDK sub-dispatches carry ``parent`` and are never collapsed (C4), so they classify normally.
    """
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(classified_tool("safe", lambda args: True))
    coded = runtime.scope("coded")
    coded.present_as("code")
    both = runtime.scope("both")
    both.present_as("both")

    assert runtime.execution_mode(call("safe", agent="coded")) == "exclusive"
    assert runtime.execution_mode(call("safe", agent="coded", parent=ExecutionToken())) == "parallel"
    assert runtime.execution_mode(call("safe", agent="both")) == "parallel"
    assert runtime.execution_mode(call("safe")) == "parallel"


def test_code_mode_inherited_from_a_preset_or_the_default_also_collapses() -> None:
    """M2 + P3: the collapse reads the scope's *effective* mode, not only its own declaration."""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    runtime.register(classified_tool("safe", lambda args: True))
    preset = runtime.scope("preset")
    runtime.scope("joined", parent=preset)
    opted_out = runtime.scope("opted-out")
    opted_out.present_as("native")

    assert runtime.execution_mode(call("safe")) == "exclusive"  # deployment default: code
    assert runtime.execution_mode(call("safe", agent="joined")) == "exclusive"
    assert runtime.execution_mode(call("safe", agent="opted-out")) == "parallel"
    assert runtime.execution_mode(call("safe", parent=ExecutionToken())) == "parallel"
