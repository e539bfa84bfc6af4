"""Policy phases: pre-execute, approval, guards, ``tools/execute`` wrappers, post-execute.

Port of ``tools.spec.ts`` › ``ToolRuntime`` (including the nested ``ask routing through
ctx.approval`` describe, as :class:`TestAskRoutingThroughApproval`). Contract: §2.5 (guards), §2.8
E6–E21 and its error/result table, §2.9 (approval), §2.10 (post decisions), §3.2 items 6–11, 14, 15.

Upstream's ``approval/request`` listener plus ``ApprovalService`` collapse, in Python, into one
object passed as ``ToolRuntime(approval=...)``: the in-test :class:`helpers.Approver`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from helpers import (
    ECHO_OUTPUT,
    Approver,
    Gate,
    call_input,
    content_tool,
    ctx_message,
    echo_tool,
    failure,
    raising,
    returning,
    settle,
    text,
    trace_phases,
)
from toolrt import (
    AbortController,
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    ToolFailure,
    ToolrtError,
    ToolRuntime,
    ToolSuccess,
    define_tool,
)
from toolrt.lowlevel import FrozenDict, ToolError, ToolErrorInfo

AGENT = "agent-1"
UNKNOWN_TOOL = ("ToolNotFoundError", "UNKNOWN_TOOL")
OUTPUT_ERROR = ("ToolOutputError", "INVALID_TOOL_OUTPUT")


def deciding(decision: Any) -> Any:
    """A pre- or post-execute listener that returns ``decision`` without delegating."""

    async def listener(*args: Any) -> Any:
        return decision

    return listener


def throwing(error: BaseException) -> Any:
    """A pre-execute, ``tools/execute`` or post-execute listener that raises ``error``."""

    async def listener(*args: Any) -> Any:
        raise error

    return listener


class Recorder:
    """Counts how often a phase ran and what it saw."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def post(self, execution: Any, result: Any, next: Any) -> Any:
        self.seen.append(result)
        return await next()

    async def around(self, execution: Any, next: Any) -> Any:
        self.seen.append(execution.name)
        return await next()

    @property
    def count(self) -> int:
        return len(self.seen)


def counting_body(counter: list[int], value: Any = "ran") -> Any:
    async def execute(args: Any, ctx: Any) -> Any:
        counter[0] += 1
        return value

    return execute


def value_context() -> dict[str, Any]:
    return {
        "id": "ctx-value",
        "role": "user",
        "content": text("value context"),
        "source": {"kind": "plugin", "plugin": "test"},
    }


# --- post-execute decisions (§2.10) ---------------------------------------------------------------


async def test_content_replacement_keeps_value_and_meta_while_value_replacement_reprojects(
    runtime: ToolRuntime,
) -> None:
    """keeps value/meta through content replacement and recomputes both projections after value replacement"""
    runtime.register(
        define_tool(
            name="projected",
            description="projected",
            parameters={},
            output={
                "schema": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"text": {"type": "string", "required": True}},
                },
                "render": lambda _args, value: text(f"render:{value['text']}"),
                "presentation_meta": lambda _args, value: {"projected": value["text"]},
            },
            execute=returning({"text": "body"}),
        )
    )
    replacement = "content"

    async def post(execution: Any, result: Any, next: Any) -> Any:
        if replacement == "content":
            return Accept(content=text("policy content"))
        return Accept(value={"text": "policy value"}, additional_contexts=[value_context()])

    runtime.on("tools/post-execute", post)

    content = await runtime.execute(call_input("projected", call_id="content"))
    replacement = "value"
    value = await runtime.execute(call_input("projected", call_id="value"))

    assert content == ToolSuccess(
        value={"text": "body"}, content=text("policy content"), meta={"projected": "body"}
    )
    assert value == ToolSuccess(
        value={"text": "policy value"},
        content=text("render:policy value"),
        meta={"projected": "policy value"},
        additional_contexts=[value_context()],
    )


async def test_accept_replacing_both_projections_or_with_an_invalid_value_fails(runtime: ToolRuntime) -> None:
    """fails a post-execute decision that replaces both projections or supplies an invalid value"""
    runtime.register(echo_tool())
    decision: Any = Accept(value="replacement", content=text("also replacement"))
    runtime.on("tools/post-execute", lambda _e, _r, _next: decision)

    both = await runtime.execute(call_input("echo", call_id="both"))
    decision = Accept(value=1)
    invalid = await runtime.execute(call_input("echo", call_id="invalid"))

    assert both == failure("tools/post-execute accept decision cannot replace both value and content")
    assert invalid == failure('tool "echo" returned invalid output: "value" must be a string', *OUTPUT_ERROR)
    assert not hasattr(invalid, "value")


async def test_a_post_execute_block_becomes_a_valueless_failure(runtime: ToolRuntime) -> None:
    """turns a post-execute block into a valueless failure"""
    runtime.register(echo_tool())
    runtime.on("tools/post-execute", deciding(Block(text("blocked by policy"))))

    result = await runtime.execute(call_input("echo", {"text": "secret"}, call_id="block"))

    assert result == ToolFailure(error=ToolError("blocked by policy"), content=text("blocked by policy"))
    assert not hasattr(result, "value")


async def test_a_value_replacement_adds_no_context_of_its_own(runtime: ToolRuntime) -> None:
    """replaces a canonical value without manufacturing additional context"""
    runtime.register(echo_tool())
    runtime.on("tools/post-execute", deciding(Accept(value="replacement")))

    result = await runtime.execute(call_input("echo", call_id="replace-value"))

    assert result == ToolSuccess(value="replacement", content=text("replacement"))


@pytest.mark.parametrize(
    ("feedback", "message"),
    [
        ([], "tool result blocked by post-execute policy"),
        ([{"type": "reasoning", "text": "private rationale"}], "[reasoning content]"),
    ],
    ids=["empty", "non-text"],
)
async def test_block_feedback_without_text_derives_a_stable_message(
    runtime: ToolRuntime, feedback: list[Any], message: str
) -> None:
    """derives a stable failure message from non-text or empty block feedback"""
    runtime.register(echo_tool())
    runtime.on("tools/post-execute", deciding(Block(feedback)))

    result = await runtime.execute(call_input("echo", call_id="block-message"))

    assert isinstance(result, ToolFailure)
    assert result.error.message == message
    assert result.content == feedback


async def test_a_non_json_block_feedback_becomes_a_safe_final_error(runtime: ToolRuntime) -> None:
    """contains a non-JSON post-execute failure projection as a safe final error"""
    runtime.register(echo_tool())
    runtime.on(
        "tools/post-execute",
        deciding(Block([{"type": "text", "text": "blocked", "invalid": lambda: None}])),
    )

    result = await runtime.execute(call_input("echo", call_id="invalid-block"))

    assert isinstance(result, ToolFailure)
    assert result.error == ToolError("tool result must be losslessly JSON-serializable")
    assert result.content == text("Error: tool result must be losslessly JSON-serializable")


async def test_value_replacement_on_a_failed_dispatch_fails(runtime: ToolRuntime) -> None:
    """rejects value replacement on a failed dispatch"""
    runtime.register(echo_tool(name="throw-before-replace", execute=raising(RuntimeError("body failed"))))
    runtime.on("tools/post-execute", deciding(Accept(value="replacement")))

    result = await runtime.execute(call_input("throw-before-replace", call_id="failed-replace"))

    assert result == failure("tools/post-execute cannot replace the value of a failed result")


async def test_value_replacement_fails_when_the_tool_vanished_during_post_policy(
    runtime: ToolRuntime,
) -> None:
    """fails value replacement when the owning tool disappears before post-policy resolves"""
    dispose = runtime.register(echo_tool())

    async def post(execution: Any, result: Any, next: Any) -> Any:
        dispose()
        return Accept(value="replacement")

    runtime.on("tools/post-execute", post)

    result = await runtime.execute(call_input("echo", call_id="post-disposed"))

    assert result == failure('unknown tool "echo"', *UNKNOWN_TOOL)


async def test_post_accept_content_replaces_what_the_model_reads(runtime: ToolRuntime) -> None:
    """a tools/post-execute listener can replace the result content (accept)"""
    runtime.register(echo_tool())
    runtime.on("tools/post-execute", deciding(Accept(content=text("rewritten"))))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == ToolSuccess(value="hi", content=text("rewritten"))


async def test_post_block_turns_the_call_into_corrective_feedback(runtime: ToolRuntime) -> None:
    """a tools/post-execute block turns the call into an isError with corrective feedback"""
    runtime.register(echo_tool())
    runtime.on("tools/post-execute", deciding(Block(text("output rejected: try again"))))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == ToolFailure(
        error=ToolError("output rejected: try again"), content=text("output rejected: try again")
    )


async def test_dispatch_outcomes_are_frozen_before_wrappers_and_post_see_them(runtime: ToolRuntime) -> None:
    """freezes core dispatch outcomes before around and post listeners can observe them"""
    runtime.register(echo_tool())
    refused: list[str] = []

    async def around(execution: Any, next: Any) -> Any:
        result = await next()
        try:
            result.value = "around mutation"
        except dataclasses.FrozenInstanceError:
            refused.append("around")
        return result

    async def post(execution: Any, result: Any, next: Any) -> Any:
        try:
            result.value = "post mutation"
        except dataclasses.FrozenInstanceError:
            refused.append("post")
        with pytest.raises(TypeError):
            result.content.append({"type": "text", "text": "more"})
        return await next()

    runtime.on("tools/execute", around)
    runtime.on("tools/post-execute", post)

    result = await runtime.execute(call_input("echo", {"text": "original"}, call_id="frozen-canonical"))

    assert refused == ["around", "post"]
    assert isinstance(result, ToolSuccess)
    assert result.value == "original"


# --- pre-execute and approval (§2.9) --------------------------------------------------------------


async def test_a_pre_execute_listener_can_deny_and_post_sees_it_frozen(runtime: ToolRuntime) -> None:
    """lets a tools/pre-execute listener deny a call (permission pattern)"""
    runtime.register(echo_tool())
    post_saw: list[Any] = []

    async def pre(execution: Any, next: Any) -> Any:
        if execution.name == "echo":
            return Deny("denied by policy")
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        post_saw.append(result)
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.content = []
        with pytest.raises(TypeError):
            result.content.clear()
        return await next()

    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/post-execute", post)

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure("denied by policy")
    assert post_saw == [result]


async def test_an_ask_without_an_approval_service_degrades_to_its_reason(runtime: ToolRuntime) -> None:
    """an ask decision degrades to deny when no approval seam is mounted"""
    runtime.register(echo_tool())
    runtime.on("tools/pre-execute", deciding(Ask("needs approval")))
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo", {"text": "hi"}, agent=AGENT))

    assert result == failure("needs approval")
    assert post.seen == [result]


async def test_an_ask_without_reason_or_service_uses_the_default_message(runtime: ToolRuntime) -> None:
    """an ask decision with no reason degrades to deny with a default message"""
    runtime.register(echo_tool())
    runtime.on("tools/pre-execute", deciding(Ask()))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure('tool "echo" requires approval (not yet supported)')


class TestAskRoutingThroughApproval:
    """describe: ask routing through ctx.approval"""

    @staticmethod
    def setup(approver: Approver, reason: str | None = None) -> ToolRuntime:
        runtime = ToolRuntime(approval=approver)
        runtime.register(echo_tool())
        runtime.on("tools/pre-execute", deciding(Ask(reason)))
        return runtime

    async def test_allowed_once_dispatches_and_forwards_the_ask_fields(self) -> None:
        """dispatches the tool when the answerer grants allowed-once, forwarding the ask fields

        Python adds the frozen ``arguments`` and the ``execution`` to the request (ADR 0001).
        """
        approver = Approver("allowed-once")
        runtime = self.setup(approver, "hook wants a human")
        controller = AbortController()

        result = await runtime.execute(call_input("echo", {"text": "hi"}, controller.signal, agent=AGENT))

        assert result == ToolSuccess(value="hi", content=text("hi"))
        (request,) = approver.requests
        assert request.agent == AGENT
        assert request.tool_name == "echo"
        assert request.call_id == "c1"
        assert request.reason == "hook wants a human"
        assert request.signal is controller.signal
        assert request.arguments == {"text": "hi"}
        assert isinstance(request.arguments, FrozenDict)
        assert request.execution.name == "echo"

    async def test_an_ask_without_reason_sends_none(self) -> None:
        """Python-specific: ``reason`` is only forwarded when given (A1); absent reads ``None``."""
        approver = Approver("allowed-once")
        runtime = self.setup(approver)

        await runtime.execute(call_input("echo", agent=AGENT))

        assert approver.requests[0].reason is None

    async def test_rejected_denies_with_the_user_rejection_reason(self) -> None:
        """denies with the user-rejection reason on rejected"""
        runtime = self.setup(Approver("rejected"))
        post = Recorder()
        runtime.on("tools/post-execute", post.post)

        result = await runtime.execute(call_input("echo", agent=AGENT))

        assert result == failure('the user rejected tool "echo"')
        assert post.seen == [result]

    async def test_cancelled_denies_with_the_cancellation_reason(self) -> None:
        """denies with the cancellation reason on cancelled"""
        runtime = self.setup(Approver("cancelled"))

        result = await runtime.execute(call_input("echo", agent=AGENT))

        assert result == failure('approval for tool "echo" was cancelled')

    async def test_caller_cancellation_overtaking_approval_aborts_before_dispatch(self) -> None:
        """returns ABORTED_BEFORE_DISPATCH when caller cancellation overtakes approval"""
        gate = Gate()
        runtime = self.setup(Approver("allowed-once", gate))
        dispatched = [0]
        runtime.register(echo_tool(name="approval-probe", execute=counting_body(dispatched)))
        controller = AbortController()

        pending = asyncio.ensure_future(
            runtime.execute(
                call_input(
                    "approval-probe", signal=controller.signal, call_id="approval-cancelled", agent=AGENT
                )
            )
        )
        await gate.reached()
        controller.abort("caller cancelled approval")
        gate.open()
        result = await settle(pending)

        assert result == failure("tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH")
        assert dispatched == [0]

    async def test_unavailable_denies_with_the_no_channel_reason(self) -> None:
        """denies with the no-channel reason when the seam is mounted but nobody answers

        Python has no separate ``approval/request`` listener list: an approval service that has nobody
        to ask answers ``"unavailable"`` itself.
        """
        runtime = self.setup(Approver("unavailable"))

        result = await runtime.execute(call_input("echo", agent=AGENT))

        assert result == failure('tool "echo" requires approval, but no approval channel is available')

    async def test_an_agent_less_call_is_denied_without_asking(self) -> None:
        """denies an agent-less execution without asking — nothing to route or audit through"""
        approver = Approver("allowed-once")
        runtime = self.setup(approver)

        result = await runtime.execute(call_input("echo"))

        assert approver.requests == []
        assert result == failure(
            'tool "echo" requires approval, but the call has no agent to route it through'
        )

    async def test_a_rogue_outcome_becomes_a_final_error(self) -> None:
        """turns a rogue outcome from a NON-conforming approval stand-in into an isError result

        Table: the rogue outcome is a final error (post-execute does not run).
        """
        runtime = self.setup(Approver("yolo"))
        post = Recorder()
        runtime.on("tools/post-execute", post.post)

        result = await runtime.execute(call_input("echo", agent=AGENT))

        assert result == failure('unreachable variant in ApprovalOutcome: "yolo"')
        assert post.count == 0

    async def test_a_raising_approval_service_becomes_a_final_error(self) -> None:
        """Python-specific (E12 "approval throw"): its message and ToolrtError info; no post-execute."""
        runtime = self.setup(Approver(ToolrtError("approval backend down", "APPROVAL_DOWN")))
        post = Recorder()
        runtime.on("tools/post-execute", post.post)

        result = await runtime.execute(call_input("echo", agent=AGENT))

        assert result == failure("approval backend down", "ToolrtError", "APPROVAL_DOWN")
        assert post.count == 0


async def test_pre_execute_cannot_rewrite_the_arguments(runtime: ToolRuntime) -> None:
    """Python-specific (A2): ``execution.arguments`` is frozen and read-only in pre-execute."""
    seen: list[Any] = []
    runtime.register(echo_tool(execute=lambda args, ctx: seen.append(dict(args)) or args.get("text", "")))
    refused: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        try:
            execution.arguments["text"] = "rewritten"
        except TypeError:
            refused.append("item")
        try:
            execution.arguments = {"text": "rewritten"}
        except AttributeError:
            refused.append("attribute")
        return await next()

    runtime.on("tools/pre-execute", pre)

    result = await runtime.execute(call_input("echo", {"text": "original"}))

    assert refused == ["item", "attribute"]
    assert seen == [{"text": "original"}]
    assert result == ToolSuccess(value="original", content=text("original"))


async def test_scoped_pre_execute_listeners_see_only_their_agents_calls(runtime: ToolRuntime) -> None:
    """Python-specific (A3): a scope's pre-execute listener never sees other agents' or agent-less calls."""
    runtime.register(echo_tool())
    scope = runtime.scope("a")
    scope.on("tools/pre-execute", deciding(Deny("scoped denial")))

    assert await runtime.execute(call_input("echo", {"text": "x"}, agent="a")) == failure("scoped denial")
    assert await runtime.execute(call_input("echo", {"text": "x"}, agent="b")) == ToolSuccess(
        value="x", content=text("x")
    )
    assert await runtime.execute(call_input("echo", {"text": "x"})) == ToolSuccess(
        value="x", content=text("x")
    )


async def test_sync_listeners_take_part_in_waterfalls(runtime: ToolRuntime) -> None:
    """Python-specific (ADR 0001 "waterfall"): plain-function listeners may return a decision or
    ``next()``'s awaitable.
    """
    runtime.register(echo_tool())
    runtime.on("tools/pre-execute", lambda execution, next: next())
    runtime.on("tools/execute", lambda execution, next: next())
    runtime.on("tools/post-execute", lambda execution, result, next: next())

    assert await runtime.execute(call_input("echo", {"text": "x"})) == ToolSuccess(
        value="x", content=text("x")
    )

    runtime.on("tools/pre-execute", lambda execution, next: Deny("sync denial"), prepend=True)

    assert await runtime.execute(call_input("echo", {"text": "x"})) == failure("sync denial")


@pytest.mark.parametrize(
    ("event", "listener", "prefix"),
    [
        ("tools/pre-execute", lambda e, n: True, "tools/pre-execute must return a decision"),
        (
            "tools/execute",
            lambda e, n: "a string",
            "a tools/execute wrapper must return a ToolSuccess or ToolFailure",
        ),
        ("tools/post-execute", lambda e, r, n: None, "tools/post-execute must return Accept or Block"),
    ],
    ids=["pre", "execute", "post"],
)
async def test_a_listener_returning_a_non_decision_fails_the_call(
    runtime: ToolRuntime, event: Any, listener: Any, prefix: str
) -> None:
    """Python-specific: a listener returning the wrong type is a failed call (a contract violation,
    like a throw in that phase), never a silent allow.
    """
    ran = [0]
    runtime.register(echo_tool(execute=counting_body(ran, "")))
    runtime.on(event, listener)

    result = await runtime.execute(call_input("echo"))

    assert isinstance(result, ToolFailure)
    assert result.error.message.startswith(prefix)
    assert result.content == text(f"Error: {result.error.message}")
    if event != "tools/post-execute":
        assert ran == [0]


# --- waterfall ordering and wrappers (§2.8 E13–E18) -----------------------------------------------


async def test_pre_and_post_waterfalls_compose_around_dispatch(runtime: ToolRuntime) -> None:
    """composes pre + post waterfalls around dispatch (sandbox-wrap pattern)"""
    runtime.register(echo_tool())
    order: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        order.append("pre:before")
        decision = await next()
        order.append("pre:after")
        return decision

    async def post(execution: Any, result: Any, next: Any) -> Any:
        order.append("post:before")
        decision = await next()
        order.append("post:after")
        return decision

    runtime.on("tools/pre-execute", pre)
    runtime.on("tools/post-execute", post)

    result = await runtime.execute(call_input("echo", {"text": "x"}))

    assert result == ToolSuccess(value="x", content=text("x"))
    assert order == ["pre:before", "pre:after", "post:before", "post:after"]


async def test_execute_wrappers_run_between_pre_and_post_around_the_body(runtime: ToolRuntime) -> None:
    """runs tools/execute after an allowed pre-execute, around dispatch, and before post-execute"""
    order: list[str] = []

    async def body(args: Any, ctx: Any) -> Any:
        order.append("dispatch")
        return text(args.get("text", ""))

    runtime.register(
        content_tool(name="traced", description="echo", parameters={"text": {"type": "string"}}, execute=body)
    )

    trace_phases(runtime, order)

    result = await runtime.execute(call_input("traced", {"text": "hi"}))

    assert result == ToolSuccess(value=text("hi"), content=text("hi"))
    assert order == ["pre", "execute:before", "dispatch", "execute:after", "post"]


async def test_a_pre_execute_deny_never_enters_the_execute_seam(runtime: ToolRuntime) -> None:
    """a pre-execute deny short-circuits before tools/execute (the seam never runs)"""
    runtime.register(echo_tool())
    around = Recorder()
    runtime.on("tools/pre-execute", deciding(Deny("nope")))
    runtime.on("tools/execute", around.around)

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure("nope")
    assert around.count == 0


async def test_a_wrapper_sees_the_normalized_failure_of_a_raising_body(runtime: ToolRuntime) -> None:
    """a thrown tool is normalized to an isError result BEFORE a tools/execute listener sees next()"""
    runtime.register(echo_tool(name="boom", execute=raising(ToolrtError("kaboom", "BOOM"))))
    seen: list[Any] = []

    async def around(execution: Any, next: Any) -> Any:
        result = await next()
        seen.append(result)
        return result

    runtime.on("tools/execute", around)

    result = await runtime.execute(call_input("boom"))

    assert seen == [failure("kaboom", "ToolrtError", "BOOM")]
    assert result == failure("kaboom", "ToolrtError", "BOOM")


async def test_a_body_failure_normalized_in_a_wrapper_still_reaches_post_execute(
    runtime: ToolRuntime,
) -> None:
    """a thrown tool normalized inside tools/execute still reaches post-execute"""
    runtime.register(echo_tool(name="boom", execute=raising(RuntimeError("exploded"))))
    post = Recorder()
    runtime.on("tools/execute", lambda execution, next: next())
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("boom"))

    assert [seen.is_error for seen in post.seen] == [True]
    assert result == failure("exploded")


async def test_a_wrapper_can_short_circuit_and_its_success_is_re_rendered(runtime: ToolRuntime) -> None:
    """a tools/execute listener can short-circuit dispatch by returning a result without next()"""
    dispatched = [0]
    runtime.register(echo_tool(name="never-runs", execute=counting_body(dispatched, "unreachable")))
    runtime.on(
        "tools/execute",
        deciding(ToolSuccess(value="short-circuited", content=text("ignored authored content"))),
    )

    result = await runtime.execute(call_input("never-runs"))

    assert dispatched == [0]
    assert result == ToolSuccess(value="short-circuited", content=text("short-circuited"))


async def test_a_cached_result_from_another_dispatch_is_revalidated(runtime: ToolRuntime) -> None:
    """revalidates a cached canonical result returned from a different dispatch

    Table: a wrapper-authored success that fails validation is a final error (no post-execute).
    """
    runtime.register(echo_tool(name="string-output", execute=returning("cached")))
    object_ran = [0]
    runtime.register(
        define_tool(
            name="object-output",
            description="Return one closed object.",
            parameters={},
            output={
                "schema": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean", "required": True}},
                    "additionalProperties": False,
                },
                "render": lambda _args, value: text(str(value["ok"])),
            },
            execute=counting_body(object_ran, {"ok": True}),
        )
    )
    cached: list[Any] = []

    async def around(execution: Any, next: Any) -> Any:
        if execution.name == "string-output":
            cached.append(await next())
            return cached[0]
        return cached[0]

    runtime.on("tools/execute", around)
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    first = await runtime.execute(call_input("string-output", call_id="cached-first"))
    second = await runtime.execute(call_input("object-output", call_id="cached-second"))

    assert first == ToolSuccess(value="cached", content=text("cached"))
    assert object_ran == [0]
    assert isinstance(second, ToolFailure)
    assert second.error.info == ToolErrorInfo(*OUTPUT_ERROR)
    assert second.error.message.startswith('tool "object-output" returned invalid output: ')
    assert post.seen == [first]


async def test_a_wrapper_authored_failure_is_kept_with_its_meta_and_contexts(runtime: ToolRuntime) -> None:
    """normalizes wrapper-authored failure metadata and contexts

    A wrapper-authored failure is a post-result: post-execute sees it.
    """
    runtime.register(echo_tool())
    authored = ToolFailure(
        error=ToolError("wrapped failure"),
        content=text("wrapper content"),
        meta={"wrapped": True},
        additional_contexts=[ctx_message("wrapper")],
    )
    runtime.on("tools/execute", deciding(authored))
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo", call_id="wrapper-failure"))

    assert result == authored
    assert post.seen == [authored]


async def test_wrapper_success_normalization_fails_when_the_tool_vanished(runtime: ToolRuntime) -> None:
    """fails wrapper-authored success normalization when the owning tool disappears"""
    dispose = runtime.register(echo_tool())

    async def around(execution: Any, next: Any) -> Any:
        dispose()
        return ToolSuccess(value="replacement", content=[])

    runtime.on("tools/execute", around)
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo", call_id="wrapper-disposed"))

    assert result == failure('unknown tool "echo"', *UNKNOWN_TOOL)
    assert post.count == 0


# --- listeners that raise (E12, E18, E21) ---------------------------------------------------------


async def test_a_raising_execute_wrapper_becomes_a_final_error(runtime: ToolRuntime) -> None:
    """returns an isError result when a tools/execute listener throws"""
    runtime.register(echo_tool())

    runtime.on("tools/execute", throwing(RuntimeError("wrapper broke")))
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure("wrapper broke")
    assert post.count == 0


async def test_a_raising_pre_execute_listener_becomes_a_final_error(runtime: ToolRuntime) -> None:
    """returns an isError result when a tools/pre-execute listener throws"""
    ran = [0]
    runtime.register(echo_tool(execute=counting_body(ran, "")))

    runtime.on("tools/pre-execute", throwing(RuntimeError("permission hook broke")))
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure("permission hook broke")
    assert ran == [0]
    assert post.count == 0


async def test_a_raising_post_execute_listener_becomes_the_error(runtime: ToolRuntime) -> None:
    """returns an isError result when a tools/post-execute listener throws"""
    runtime.register(echo_tool())

    runtime.on("tools/post-execute", throwing(RuntimeError("post hook broke")))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure("post hook broke")


async def test_a_pre_execute_harness_error_keeps_its_structured_info(runtime: ToolRuntime) -> None:
    """preserves structured error info when a tools/pre-execute listener throws ToolrtError"""
    runtime.register(echo_tool())

    runtime.on("tools/pre-execute", throwing(ToolrtError("denied", "DENIED")))

    result = await runtime.execute(call_input("echo", {"text": "hi"}))

    assert result == failure("denied", "ToolrtError", "DENIED")


# --- guards (§2.5) --------------------------------------------------------------------------------


async def test_a_guard_denial_goes_through_post_execute_and_skips_the_body(runtime: ToolRuntime) -> None:
    """Python-specific port of G3 (scoped.spec "applies scoped guards after pre-execute…"):
    a guard denial is ``Error: <reason>`` without info, the body never runs, post-execute sees it.
    """
    ran = [0]
    runtime.register(echo_tool(execute=counting_body(ran, "")))
    runtime.guard(lambda execution: None)
    runtime.guard(lambda execution: "global denial")
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo"))

    assert result == failure("global denial")
    assert ran == [0]
    assert post.seen == [result]


async def test_a_listener_forcing_allow_cannot_bypass_a_guard(runtime: ToolRuntime) -> None:
    """Python-specific port of G3: a prepended pre-execute listener returning ``Allow()`` without
    delegating still meets the guards (scoped guards apply to their agent only).
    """
    runtime.register(echo_tool())
    scope = runtime.scope("a")
    scope.guard(lambda execution: "terminal policy")
    scope.on("tools/pre-execute", deciding(Allow()), prepend=True)
    runtime.on("tools/pre-execute", deciding(Allow()), prepend=True)

    assert await runtime.execute(call_input("echo", agent="a")) == failure("terminal policy")
    assert await runtime.execute(call_input("echo", {"text": "t"}, agent="b")) == ToolSuccess(
        value="t", content=text("t")
    )


async def test_guards_run_only_after_an_allow_including_an_approved_ask() -> None:
    """Python-specific port of G2: guards are evaluated only when the decision (after approval) is
    allow — not after a deny, and after the approval service granted the ask.
    """
    order: list[str] = []

    class OrderedApprover(Approver):
        async def request(self, request: Any) -> Any:
            order.append("approval")
            return "allowed-once"

    runtime = ToolRuntime(approval=OrderedApprover())
    runtime.register(echo_tool())

    def guard(execution: Any) -> None:
        order.append("guard")

    runtime.guard(guard)
    decision: Any = Ask()
    runtime.on("tools/pre-execute", lambda execution, next: decision)

    assert await runtime.execute(call_input("echo", {"text": "ok"}, agent=AGENT)) == ToolSuccess(
        value="ok", content=text("ok")
    )
    decision = Deny("denied first")
    assert await runtime.execute(call_input("echo", agent=AGENT)) == failure("denied first")
    assert order == ["approval", "guard"]
    runtime.close()


async def test_a_raising_guard_is_a_final_error(runtime: ToolRuntime) -> None:
    """Python-specific port of G3: a throwing guard is a final error (post-execute does not run)."""
    runtime.register(echo_tool())

    def guard(execution: Any) -> None:
        raise ToolrtError("guard broke", "GUARD_BROKE")

    runtime.guard(guard)
    post = Recorder()
    runtime.on("tools/post-execute", post.post)

    result = await runtime.execute(call_input("echo"))

    assert result == failure("guard broke", "ToolrtError", "GUARD_BROKE")
    assert post.count == 0


async def test_a_guard_returning_a_non_string_fails_the_call(runtime: ToolRuntime) -> None:
    """Python-specific (ADR 0001 "Guards"): ``False`` is neither abstain nor a reason — a failed call."""
    ran = [0]
    runtime.register(echo_tool(execute=counting_body(ran, "")))
    runtime.guard(lambda execution: False)

    result = await runtime.execute(call_input("echo"))

    assert result == failure("a tool guard must return a denial reason (str) or None, got bool")
    assert ran == [0]


async def test_guards_see_the_frozen_execution_and_stop_at_the_first_reason(runtime: ToolRuntime) -> None:
    """Python-specific port of G2: registration order, first non-``None`` wins, later guards skipped;
    a disposed guard no longer runs.
    """
    runtime.register(echo_tool())
    calls: list[str] = []

    def first(execution: Any) -> None:
        calls.append("first")
        with pytest.raises(TypeError):
            execution.arguments["text"] = "changed"

    def second(execution: Any) -> str | None:
        calls.append("second")
        return "second says no" if execution.arguments.get("text") == "deny me" else None

    def third(execution: Any) -> str:
        calls.append("third")
        return "third says no"

    runtime.guard(first)
    runtime.guard(second)
    dispose_third = runtime.guard(third)

    assert await runtime.execute(call_input("echo", {"text": "deny me"})) == failure("second says no")
    assert calls == ["first", "second"]
    dispose_third()
    calls.clear()
    assert await runtime.execute(call_input("echo", {"text": "fine"})) == ToolSuccess(
        value="fine", content=text("fine")
    )
    assert calls == ["first", "second"]


async def test_echo_output_helper_matches_upstream_echo(runtime: ToolRuntime) -> None:
    """Sanity check of the shared fixture: ``echo_tool()`` is upstream's ``echoTool``."""
    definition = echo_tool()
    assert definition.output.schema == {"type": "string"}
    assert definition.output.render is ECHO_OUTPUT["render"]
    runtime.register(definition)
    assert await runtime.execute(call_input("echo")) == ToolSuccess(value="", content=text(""))
