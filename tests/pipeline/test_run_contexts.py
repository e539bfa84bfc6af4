"""Additional contexts (§2.12 X1–X4) and ``finalize_content`` (§2.11 S3, §2.8 E22–E23).

Port of the context and final-content titles of ``tools.spec.ts`` › ``ToolRuntime`` (§3.2 items 12,
13, 18). Contexts are user messages built with :func:`helpers.ctx_message`; their ``source.plugin``
names them in assertions.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from helpers import (
    ECHO_OUTPUT,
    call_input,
    content_tool,
    context_sources,
    ctx_message,
    echo_tool,
    failure,
    text,
)
from toolrt import (
    AbortController,
    AbortSignal,
    Accept,
    Block,
    Deny,
    ToolFailure,
    ToolrtError,
    ToolRuntime,
    ToolSuccess,
)
from toolrt.lowlevel import FrozenDict, FrozenList, ToolError, ToolErrorInfo

NOT_LOSSLESS_RESULT = "tool result must be losslessly JSON-serializable"


class HostileList(list):
    """A list whose iteration raises: inspecting it fails with an ordinary exception."""

    def __init__(self, message: str) -> None:
        super().__init__([1])
        self.message = message

    def __iter__(self) -> Any:
        raise RuntimeError(self.message)


def deferring(*sources: str, value: Any = None, error: BaseException | None = None) -> Any:
    """An async body that defers one context per source, then returns ``value`` or raises."""

    async def execute(args: Any, ctx: Any) -> Any:
        for source in sources:
            ctx.defer_context(ctx_message(source))
        if error is not None:
            raise error
        return text("done") if value is None else value

    return execute


def deciding(decision: Any) -> Any:
    async def listener(*args: Any) -> Any:
        return decision

    return listener


# --- ordering (X1, X2, X4) ------------------------------------------------------------------------


async def test_deferred_wrapper_and_post_contexts_keep_their_order(runtime: ToolRuntime) -> None:
    """preserves tool-deferred, execute-wrapper, and post-execute contexts in order

    X4: sources ``nested-1, nested-2, wrapper, post``.
    """
    runtime.register(content_tool(name="composite", execute=deferring("nested-1", "nested-2")))

    async def around(execution: Any, next: Any) -> Any:
        result = await next()
        return dataclasses.replace(
            result, additional_contexts=[*result.additional_contexts, ctx_message("wrapper")]
        )

    async def post(execution: Any, result: Any, next: Any) -> Any:
        downstream = await next()
        return Accept(additional_contexts=[ctx_message("post"), *downstream.additional_contexts])

    runtime.on("tools/execute", around)
    runtime.on("tools/post-execute", post)

    result = await runtime.execute(call_input("composite", call_id="composite"))

    assert result == ToolSuccess(
        value=text("done"),
        content=text("done"),
        additional_contexts=[ctx_message(source) for source in ("nested-1", "nested-2", "wrapper", "post")],
    )
    assert isinstance(result.additional_contexts, FrozenList)
    assert all(isinstance(context, FrozenDict) for context in result.additional_contexts)


async def test_deferred_contexts_survive_a_throw_but_not_a_block(runtime: ToolRuntime) -> None:
    """keeps deferred contexts when a composite tool throws, but drops them when the outer call is blocked"""
    runtime.register(
        content_tool(
            name="failing-composite", execute=deferring("nested", error=RuntimeError("outer failure"))
        )
    )

    failed = await runtime.execute(call_input("failing-composite", call_id="failed"))
    runtime.on(
        "tools/post-execute",
        deciding(Block(text("blocked"), additional_contexts=[ctx_message("blocker")])),
    )
    blocked = await runtime.execute(call_input("failing-composite", call_id="blocked"))

    assert failed == failure("outer failure", additional_contexts=[ctx_message("nested")])
    assert blocked == ToolFailure(
        error=ToolError("blocked"), content=text("blocked"), additional_contexts=[ctx_message("blocker")]
    )


async def test_a_block_decision_can_also_attach_contexts(runtime: ToolRuntime) -> None:
    """a block decision can ALSO attach additionalContexts"""
    runtime.register(echo_tool())
    runtime.on(
        "tools/post-execute",
        deciding(Block(text("rejected"), additional_contexts=[ctx_message("why it was rejected")])),
    )

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert isinstance(result, ToolFailure)
    assert result.content == text("rejected")
    assert result.additional_contexts == [ctx_message("why it was rejected")]


async def test_post_execute_contexts_ride_on_the_result(runtime: ToolRuntime) -> None:
    """post-execute additionalContexts ride on the result for the loop to buffer"""
    runtime.register(echo_tool())
    runtime.on("tools/post-execute", deciding(Accept(additional_contexts=[ctx_message("fyi")])))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == ToolSuccess(value="hi", content=text("hi"), additional_contexts=[ctx_message("fyi")])


async def test_contexts_from_an_around_dispatch_result_are_kept(runtime: ToolRuntime) -> None:
    """preserves additionalContexts supplied by an around-dispatch result"""
    runtime.register(echo_tool())
    runtime.on(
        "tools/execute",
        deciding(
            ToolSuccess(
                value="short-circuited with context",
                content=text("short-circuited with context"),
                additional_contexts=[ctx_message("from around dispatch")],
            )
        ),
    )

    result = await runtime.execute(call_input("echo", call_id="around-context"))

    assert result.additional_contexts == [ctx_message("from around dispatch")]


@pytest.mark.parametrize("replacement", ["content", "value", "none"])
async def test_post_accept_appends_its_contexts_after_the_results(
    runtime: ToolRuntime, replacement: str
) -> None:
    """Python-specific port of X2 / PO3 / PO4: an accept (replacing content, value, or nothing) keeps
    the result's contexts — deferred, then wrapper — and appends its own.
    """
    runtime.register(echo_tool(name="deferrer", execute=deferring("deferred", value="body")))

    async def around(execution: Any, next: Any) -> Any:
        result = await next()
        return dataclasses.replace(result, additional_contexts=[ctx_message("wrapper")])

    fields: dict[str, Any] = {
        "content": {"content": text("replaced")},
        "value": {"value": "new value"},
        "none": {},
    }[replacement]
    runtime.on("tools/execute", around)
    runtime.on("tools/post-execute", deciding(Accept(additional_contexts=[ctx_message("post")], **fields)))

    result = await runtime.execute(call_input("deferrer"))

    assert isinstance(result, ToolSuccess)
    assert context_sources(result) == ["deferred", "wrapper", "post"]


async def test_a_sync_body_on_a_worker_thread_can_defer_contexts(runtime: ToolRuntime) -> None:
    """Python-specific (X1): ``defer_context`` works from a plain body running on a worker thread."""

    def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(ctx_message("threaded"))
        return "ok"

    runtime.register(echo_tool(name="threaded", execute=execute))

    result = await runtime.execute(call_input("threaded"))

    assert result == ToolSuccess(
        value="ok", content=text("ok"), additional_contexts=[ctx_message("threaded")]
    )


async def test_deferred_contexts_ride_on_an_invalid_output_failure(runtime: ToolRuntime) -> None:
    """Python-specific (X1 "even when the body then throws"): an output-validation failure is a body
    failure too, and keeps the contexts the body deferred.
    """
    runtime.register(echo_tool(name="bad-value", execute=deferring("nested", value=42)))

    result = await runtime.execute(call_input("bad-value"))

    assert result == failure(
        'tool "bad-value" returned invalid output: "value" must be a string',
        "ToolOutputError",
        "INVALID_TOOL_OUTPUT",
        additional_contexts=[ctx_message("nested")],
    )


async def test_a_deferred_message_is_snapshotted(runtime: ToolRuntime) -> None:
    """Python-specific (D7): the result carries a frozen copy; the body's dict stays its own."""
    message = ctx_message("original")

    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(message)
        return "ok"

    runtime.register(echo_tool(name="deferrer", execute=execute))

    result = await runtime.execute(call_input("deferrer"))
    message["source"]["plugin"] = "mutated afterwards"

    assert context_sources(result) == ["original"]
    with pytest.raises(TypeError):
        result.additional_contexts[0]["id"] = "changed"


# --- losing contexts (X3) -------------------------------------------------------------------------


async def test_contexts_are_lost_when_an_execute_wrapper_raises(runtime: ToolRuntime) -> None:
    """Python-specific port of X3: a raising ``tools/execute`` wrapper is a final error without contexts."""
    runtime.register(echo_tool(name="deferrer", execute=deferring("nested", value="ok")))

    async def around(execution: Any, next: Any) -> Any:
        await next()
        raise RuntimeError("wrapper broke")

    runtime.on("tools/execute", around)

    assert await runtime.execute(call_input("deferrer")) == failure("wrapper broke")


async def test_contexts_are_lost_when_a_post_execute_listener_raises(runtime: ToolRuntime) -> None:
    """Python-specific port of X3: a raising post-execute listener replaces the result, contexts and all."""
    runtime.register(echo_tool(name="deferrer", execute=deferring("nested", value="ok")))

    async def post(execution: Any, result: Any, next: Any) -> Any:
        assert context_sources(result) == ["nested"]
        raise RuntimeError("post broke")

    runtime.on("tools/post-execute", post)

    assert await runtime.execute(call_input("deferrer")) == failure("post broke")


async def test_contexts_are_lost_when_the_finalizer_raises(runtime: ToolRuntime) -> None:
    """Python-specific port of X3: a raising ``finalize_content`` is the error, without contexts."""

    def finalizer(execution: Any, result: Any) -> Any:
        raise RuntimeError("finalizer broke")

    runtime.register(
        echo_tool(name="deferrer", execute=deferring("nested", value="ok"), finalize_content=finalizer)
    )

    assert await runtime.execute(call_input("deferrer")) == failure("finalizer broke")


_LOSSY = {"type": "text", "text": "lossy", "invalid": math.nan}


async def _lossy_deferred_context(runtime: ToolRuntime) -> Any:
    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context({"id": "lossy", "role": "user", "content": [_LOSSY]})
        return "ok"

    runtime.register(echo_tool(name="subject", execute=execute))
    return await runtime.execute(call_input("subject"))


async def _lossy_post_context(runtime: ToolRuntime) -> Any:
    runtime.register(echo_tool(name="subject"))
    runtime.on(
        "tools/post-execute",
        deciding(Accept(additional_contexts=[{"id": "lossy", "role": "user", "content": [_LOSSY]}])),
    )
    return await runtime.execute(call_input("subject"))


async def _lossy_post_content(runtime: ToolRuntime) -> Any:
    runtime.register(echo_tool(name="subject"))
    runtime.on("tools/post-execute", deciding(Accept(content=[_LOSSY])))
    return await runtime.execute(call_input("subject"))


async def _lossy_wrapper_failure_meta(runtime: ToolRuntime) -> Any:
    runtime.register(echo_tool(name="subject"))
    runtime.on(
        "tools/execute",
        deciding(ToolFailure(error=ToolError("wrapped"), content=text("wrapped"), meta={"bad": {1, 2}})),
    )
    return await runtime.execute(call_input("subject"))


async def _lossy_finalizer_content(runtime: ToolRuntime) -> Any:
    calls = [0]

    def finalizer(execution: Any, result: Any) -> Any:
        calls[0] += 1
        return [_LOSSY]

    runtime.register(echo_tool(name="subject", finalize_content=finalizer))
    result = await runtime.execute(call_input("subject"))
    assert calls == [1]
    return result


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            _lossy_deferred_context,
            id="deferred-context",
        ),
        pytest.param(_lossy_post_context, id="post-context"),
        pytest.param(_lossy_post_content, id="post-content"),
        pytest.param(
            _lossy_wrapper_failure_meta,
            id="wrapper-failure-meta",
        ),
        pytest.param(
            _lossy_finalizer_content,
            id="finalizer-content",
        ),
    ],
)
async def test_a_non_lossless_result_field_becomes_the_safe_final_error(
    runtime: ToolRuntime, make: Any
) -> None:
    """Python-specific port of E22/E23 and X3 ("lost when … materialization fails"): a result field
    that is not lossless JSON — wherever it was authored — turns the call into exactly
    ``Error: tool result must be losslessly JSON-serializable`` (no info, no contexts).
    """
    result = await make(runtime)

    assert result == failure(NOT_LOSSLESS_RESULT)


async def test_a_non_lossless_result_field_still_fails_the_call_without_contexts(
    runtime: ToolRuntime,
) -> None:
    """Python-specific companion of the test above (which pins the exact text): whatever the message,
    a non-lossless deferred context fails the call and drops every context.
    """
    result = await _lossy_deferred_context(runtime)

    assert isinstance(result, ToolFailure)
    assert result.additional_contexts == ()
    assert result.content == text(f"Error: {result.error.message}")


# --- finalize_content (S3, E23) -------------------------------------------------------------------


async def test_the_captured_finalizer_runs_after_outer_normalization(runtime: ToolRuntime) -> None:
    """runs the snapshotted final content transform after outer pipeline normalization"""
    seen: list[tuple[str, bool]] = []

    def finalizer(execution: Any, result: Any) -> Any:
        seen.append((execution.name, result.is_error))
        return text("bounded failure")

    dispose = runtime.register(
        content_tool(
            name="bounded", description="bounded result", execute=deferring(), finalize_content=finalizer
        )
    )

    async def pre(execution: Any, next: Any) -> Any:
        dispose()
        raise ToolrtError("policy failed", "POLICY_FAILED")

    runtime.on("tools/pre-execute", pre)

    result = await runtime.execute(call_input("bounded", call_id="bounded"))

    assert result == ToolFailure(
        error=ToolError("policy failed", ToolErrorInfo("ToolrtError", "POLICY_FAILED")),
        content=text("bounded failure"),
    )
    assert seen == [("bounded", True)]


async def test_a_finalizer_returning_none_keeps_the_normalized_content(runtime: ToolRuntime) -> None:
    """keeps the normalized content when the final content transform returns undefined"""
    calls = [0]

    def finalizer(execution: Any, result: Any) -> None:
        calls[0] += 1

    runtime.register(echo_tool(name="identity-finalizer", finalize_content=finalizer))

    result = await runtime.execute(call_input("identity-finalizer"))

    assert result == ToolSuccess(value="", content=text(""))
    assert calls == [1]


async def test_a_raising_finalizer_is_normalized_without_a_second_call(runtime: ToolRuntime) -> None:
    """normalizes a throwing final content callback without invoking it again"""
    calls = [0]

    def finalizer(execution: Any, result: Any) -> Any:
        calls[0] += 1
        raise RuntimeError("finalizer violated its total contract")

    runtime.register(echo_tool(name="throwing-finalizer", finalize_content=finalizer))

    result = await runtime.execute(call_input("throwing-finalizer"))

    assert result == ToolFailure(
        error=ToolError("finalizer violated its total contract"),
        content=text("Error: finalizer violated its total contract"),
    )
    assert calls == [1]


async def test_errors_found_while_snapshotting_meta_are_finalized_once(runtime: ToolRuntime) -> None:
    """finalizes errors discovered while snapshotting non-content result fields"""
    calls = [0]

    def finalizer(execution: Any, result: Any) -> Any:
        calls[0] += 1
        block = result.content[0]
        if block["type"] != "text":
            return None
        return text(block["text"][:32])

    runtime.register(
        echo_tool(
            name="throwing-meta",
            output={
                **ECHO_OUTPUT,
                "presentation_meta": lambda _a, _v: {"value": HostileList("snapshot failed: " * 100)},
            },
            finalize_content=finalizer,
            execute=deferring(value="body"),
        )
    )

    result = await runtime.execute(call_input("throwing-meta", call_id="throwing-meta"))

    assert isinstance(result, ToolFailure)
    (block,) = result.content
    assert block["type"] == "text"
    assert block["text"].startswith('Error: tool "throwing-meta"')
    assert len(block["text"]) == 32
    assert calls == [1]


async def _outcome_success(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    return call_input("echo", {"text": "hi"}), ToolSuccess(value="hi", content=text("hi"))


async def _outcome_success_with_contexts(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(
        echo_tool(
            finalize_content=finalizer,
            output={**ECHO_OUTPUT, "presentation_meta": lambda _a, value: {"len": len(value)}},
            execute=deferring("deferred", value="hi"),
        )
    )
    runtime.on("tools/post-execute", deciding(Accept(additional_contexts=[ctx_message("post")])))
    expected = ToolSuccess(
        value="hi",
        content=text("hi"),
        meta={"len": 2},
        additional_contexts=[ctx_message("deferred"), ctx_message("post")],
    )
    return call_input("echo"), expected


async def _outcome_pre_deny(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    runtime.on("tools/pre-execute", deciding(Deny("denied")))
    return call_input("echo"), failure("denied")


async def _outcome_guard_deny(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    runtime.guard(lambda execution: "guarded")
    return call_input("echo"), failure("guarded")


async def _outcome_invalid_args(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    return call_input("echo", {"text": 1}), failure(
        'invalid arguments: "text" must be a string', "ToolArgsError", "INVALID_ARGS"
    )


async def _outcome_non_lossless_args(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    return call_input("echo", {"text": math.nan}), failure(
        "tool execution arguments must be losslessly JSON-serializable"
    )


async def _outcome_body_failure(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer, execute=deferring(error=RuntimeError("exploded"))))
    return call_input("echo"), failure("exploded")


async def _outcome_pipeline_failure(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))

    async def pre(execution: Any, next: Any) -> Any:
        raise ToolrtError("policy failed", "POLICY_FAILED")

    runtime.on("tools/pre-execute", pre)
    return call_input("echo"), failure("policy failed", "ToolrtError", "POLICY_FAILED")


async def _outcome_wrapper_failure(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))

    async def around(execution: Any, next: Any) -> Any:
        raise RuntimeError("wrapper broke")

    runtime.on("tools/execute", around)
    return call_input("echo"), failure("wrapper broke")


async def _outcome_post_block(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    runtime.on("tools/post-execute", deciding(Block(text("blocked"))))
    return call_input("echo"), ToolFailure(error=ToolError("blocked"), content=text("blocked"))


async def _outcome_pre_aborted(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    runtime.register(echo_tool(finalize_content=finalizer))
    return call_input("echo", signal=AbortSignal.aborted_with("gone")), failure(
        "tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH"
    )


async def _outcome_aborted_after_body(runtime: ToolRuntime, finalizer: Any) -> tuple[Any, Any]:
    controller = AbortController()

    async def execute(args: Any, ctx: Any) -> str:
        ctx.defer_context(ctx_message("child"))
        controller.abort("caller gave up while the body ran")
        return "done"

    runtime.register(echo_tool(finalize_content=finalizer, execute=execute))
    return call_input("echo", signal=controller.signal), failure(
        "tool call aborted", "AbortError", "ABORTED", additional_contexts=[ctx_message("child")]
    )


@pytest.mark.parametrize(
    "outcome",
    [
        _outcome_success,
        _outcome_success_with_contexts,
        _outcome_pre_deny,
        _outcome_guard_deny,
        _outcome_invalid_args,
        _outcome_non_lossless_args,
        _outcome_body_failure,
        _outcome_pipeline_failure,
        _outcome_wrapper_failure,
        _outcome_post_block,
        _outcome_pre_aborted,
        _outcome_aborted_after_body,
    ],
    ids=lambda outcome: outcome.__name__.removeprefix("_outcome_"),
)
async def test_finalize_content_runs_exactly_once_for_every_outcome(
    runtime: ToolRuntime, outcome: Any
) -> None:
    """Python-specific port of S3 / E23: for every outcome of a call whose tool was visible at
    creation, the finalizer runs exactly once, sees the materialized (frozen) result, and replaces
    only its content — error, value, meta and contexts are kept.
    """
    seen: list[Any] = []

    def finalizer(execution: Any, result: Any) -> Any:
        seen.append(result)
        return text("finalized")

    call, expected = await outcome(runtime, finalizer)
    published: list[Any] = []
    runtime.on("tools/result", lambda _execution, result: published.append(result))

    result = await runtime.execute(call)

    assert seen == [expected]
    assert isinstance(seen[0].content, FrozenList)
    assert result == dataclasses.replace(expected, content=text("finalized"))
    assert published == [result]
    assert published[0] is result


async def test_the_finalizer_is_captured_when_the_execution_is_created(runtime: ToolRuntime) -> None:
    """Python-specific port of E2: re-registering the tool mid-call does not change the finalizer."""
    dispose = runtime.register(
        echo_tool(finalize_content=lambda execution, result: text("original finalizer"))
    )

    async def pre(execution: Any, next: Any) -> Any:
        dispose()
        runtime.register(echo_tool(finalize_content=lambda execution, result: text("replacement finalizer")))
        return await next()

    runtime.on("tools/pre-execute", pre)

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == ToolSuccess(value="hi", content=text("original finalizer"))


async def test_no_finalizer_applies_to_a_tool_the_caller_cannot_see(runtime: ToolRuntime) -> None:
    """Python-specific port of S3 ("whose definition was visible at creation"): a scoped tool's
    finalizer never touches another agent's unknown-tool failure.
    """
    calls = [0]

    def finalizer(execution: Any, result: Any) -> Any:
        calls[0] += 1
        return text("finalized")

    runtime.scope("owner").register(echo_tool(finalize_content=finalizer))

    result = await runtime.execute(call_input("echo", agent="stranger"))

    assert result == failure('unknown tool "echo"', "ToolNotFoundError", "UNKNOWN_TOOL")
    assert calls == [0]
