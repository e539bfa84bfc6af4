"""The approval service (upstream ``user-approval``) driven through the real pipeline."""

from __future__ import annotations

import asyncio
import io
import logging
import math
import os
from typing import Any

import pytest

from helpers import register_tool, string_tool
from toolrt import UNBOUNDED, AbortController, Ask, ToolExecutionInput, ToolRuntime
from toolrt.policies import DEFAULT_APPROVAL_WAIT_MS
from toolrt.policies._approvals import ApprovalRule, Approvals, fingerprint, rule_answerer, terminal_answerer


def runtime_with_tool(approvals: Approvals) -> tuple[ToolRuntime, list[Any]]:
    runtime = ToolRuntime(approval=approvals)
    ran: list[Any] = []

    async def body(args: Any, ctx: Any) -> str:
        ran.append(dict(args))
        return f"deleted {args['path']}"

    register_tool(
        runtime,
        "delete",
        "Delete a file.",
        body,
        parameters={"path": {"type": "string", "required": True}},
        present_call=lambda args: {"card": "generic", "title": f"Delete {args['path']}"},
    )
    runtime.on("tools/pre-execute", lambda execution, next: Ask("deleting is irreversible"))
    return runtime, ran


def call(
    path: str, signal: Any = None, agent: str | None = "agent-1", call_id: str = "c1"
) -> ToolExecutionInput:
    return ToolExecutionInput(
        call_id=call_id,
        name="delete",
        arguments={"path": path},
        signal=signal or AbortController().signal,
        agent=agent,
    )


async def test_no_answerer_is_unavailable_and_denies_with_the_exact_text() -> None:
    audit: list[tuple[str, Any]] = []
    runtime, ran = runtime_with_tool(Approvals(audit=lambda kind, data: audit.append((kind, dict(data)))))
    result = await runtime.execute(call("a.txt"))
    assert result.content == [
        {
            "type": "text",
            "text": 'Error: tool "delete" requires approval, but no approval channel is available',
        }
    ]
    assert ran == []
    assert [kind for kind, _ in audit] == ["approval/asked", "approval/decided"]
    assert audit[0][1]["arguments"] == {"path": "a.txt"}
    assert audit[0][1]["reason"] == "deleting is irreversible"
    assert audit[1][1]["outcome"] == "unavailable"
    assert (
        audit[0][1]["fingerprint"] == audit[1][1]["fingerprint"] == fingerprint("delete", {"path": "a.txt"})
    )


async def test_rule_answerer_allows_and_rejects_by_tool_pattern_and_argument_predicate() -> None:
    approvals = Approvals()
    approvals.answerer(
        rule_answerer(
            [
                ApprovalRule("del*", "rejected", when=lambda args: args["path"].startswith("/")),
                ApprovalRule("delete", "allowed-once"),
            ]
        )
    )
    runtime, ran = runtime_with_tool(approvals)
    allowed = await runtime.execute(call("notes.txt"))
    rejected = await runtime.execute(call("/etc/passwd"))
    assert allowed.value == "deleted notes.txt"
    assert rejected.content == [{"type": "text", "text": 'Error: the user rejected tool "delete"'}]
    assert ran == [{"path": "notes.txt"}]


async def test_answerers_form_a_waterfall_and_the_first_answer_wins() -> None:
    approvals = Approvals()
    order: list[str] = []

    async def outer(request: Any, next: Any) -> Any:
        order.append("outer")
        return await next()

    async def inner(request: Any, next: Any) -> Any:
        order.append("inner")
        return "allowed-once"

    approvals.answerer(outer)
    approvals.answerer(inner)
    runtime, _ = runtime_with_tool(approvals)
    assert (await runtime.execute(call("x"))).value == "deleted x"
    assert order == ["outer", "inner"]


async def test_a_caller_abort_cancels_a_pending_answer_and_the_body_never_runs() -> None:
    approvals = Approvals()
    started = asyncio.Event()

    async def never(request: Any, next: Any) -> Any:
        started.set()
        await asyncio.Event().wait()

    approvals.answerer(never)
    runtime, ran = runtime_with_tool(approvals)
    controller = AbortController()
    task = asyncio.ensure_future(runtime.execute(call("x", controller.signal)))
    await started.wait()
    controller.abort("user stop")
    result = await task
    assert result.error.info.code == "ABORTED_BEFORE_DISPATCH"  # type: ignore[union-attr]
    assert ran == []


async def test_terminal_answerer_shows_the_call_card_and_reads_yes_or_no() -> None:
    approvals = Approvals()
    output = io.StringIO()
    runtime, _ = runtime_with_tool(approvals)
    approvals.answerer(terminal_answerer(runtime=runtime, input_stream=io.StringIO("y\nn\n"), output=output))
    yes = await runtime.execute(call("a.txt"))
    no = await runtime.execute(call("b.txt"))
    assert yes.value == "deleted a.txt"
    assert no.content[0]["text"] == 'Error: the user rejected tool "delete"'
    shown = output.getvalue()
    assert "title: Delete a.txt" in shown and "why: deleting is irreversible" in shown
    assert 'arguments: {"path":"a.txt"}' in shown


async def test_always_covers_exactly_the_same_arguments_and_never_a_different_snapshot() -> None:
    approvals = Approvals()
    output = io.StringIO()
    runtime, ran = runtime_with_tool(approvals)
    # "a" for a.txt, then: a.txt again is not asked; b.txt is asked and refused.
    approvals.answerer(terminal_answerer(runtime=runtime, input_stream=io.StringIO("a\nn\n"), output=output))
    first = await runtime.execute(call("a.txt", call_id="c1"))
    again = await runtime.execute(call("a.txt", call_id="c2"))
    other = await runtime.execute(call("b.txt", call_id="c3"))
    assert first.value == again.value == "deleted a.txt"
    assert other.is_error
    assert output.getvalue().count("Allow this call?") == 2
    assert ran == [{"path": "a.txt"}, {"path": "a.txt"}]


async def test_terminal_answerer_end_of_input_is_unavailable() -> None:
    approvals = Approvals()
    runtime, _ = runtime_with_tool(approvals)
    approvals.answerer(terminal_answerer(runtime=runtime, input_stream=io.StringIO(""), output=io.StringIO()))
    result = await runtime.execute(call("a.txt"))
    assert "no approval channel is available" in result.content[0]["text"]


async def test_terminal_answerer_over_a_real_pipe() -> None:
    """A real OS pipe, as when a human types into the terminal."""
    approvals = Approvals()
    runtime, _ = runtime_with_tool(approvals)
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "r") as reader, os.fdopen(write_fd, "w") as writer:
        approvals.answerer(terminal_answerer(runtime=runtime, input_stream=reader, output=io.StringIO()))
        task = asyncio.ensure_future(runtime.execute(call("piped.txt")))
        await asyncio.sleep(0.05)
        assert not task.done()  # waiting for the human
        writer.write("yes\n")
        writer.flush()
        result = await task
    assert result.value == "deleted piped.txt"


async def test_fingerprint_ignores_key_order_but_not_values() -> None:
    assert fingerprint("t", {"a": 1, "b": 2}) == fingerprint("t", {"b": 2, "a": 1})
    assert fingerprint("t", {"a": 1}) != fingerprint("t", {"a": 2})
    assert fingerprint("t", {"a": 1}) != fingerprint("u", {"a": 1})


# --- the approval wait deadline (issue 12 item 3) -------------------------------------------------


@pytest.mark.parametrize("wait", [0, -1, math.inf, math.nan, True, None, "300000"])
def test_a_wait_deadline_must_be_a_positive_finite_number_or_unbounded(wait: Any) -> None:
    with pytest.raises(ValueError, match="wait_timeout_ms must be a positive finite number or UNBOUNDED"):
        Approvals(wait_timeout_ms=wait)


def test_the_default_wait_deadline_is_five_minutes() -> None:
    assert Approvals().wait_timeout_ms == DEFAULT_APPROVAL_WAIT_MS == 300_000
    assert Approvals(wait_timeout_ms=UNBOUNDED).wait_timeout_ms is UNBOUNDED


async def test_an_unanswered_request_expires_and_the_call_is_denied_saying_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    audit: list[tuple[str, Any]] = []
    approvals = Approvals(audit=lambda kind, data: audit.append((kind, dict(data))), wait_timeout_ms=50)
    cancelled: list[bool] = []

    async def away(request: Any, next: Any) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)  # the abandoned answerer is told, not left waiting
            raise

    approvals.answerer(away)
    runtime, ran = runtime_with_tool(approvals)
    with caplog.at_level(logging.WARNING, logger="toolrt"):
        result = await runtime.execute(call("x"))
    assert result.content == [
        {
            "type": "text",
            "text": 'Error: approval for tool "delete" expired: nobody answered before the approval wait '
            "deadline, so the call was not run",
        }
    ]
    assert ran == []
    await asyncio.sleep(0)
    assert cancelled == [True]
    assert audit[-1][0] == "approval/decided"
    assert audit[-1][1]["outcome"] == "expired" and audit[-1][1]["wait_timeout_ms"] == 50
    assert any(
        'approval for tool "delete" (c1) expired: no answer within 50ms' in record.getMessage()
        for record in caplog.records
    )


async def test_an_answer_within_the_wait_deadline_is_used() -> None:
    approvals = Approvals(wait_timeout_ms=2_000)

    async def thinks(request: Any, next: Any) -> str:
        await asyncio.sleep(0.05)
        return "allowed-once"

    approvals.answerer(thinks)
    runtime, ran = runtime_with_tool(approvals)
    assert (await runtime.execute(call("x"))).value == "deleted x"
    assert ran == [{"path": "x"}]


async def test_a_caller_abort_before_the_wait_deadline_is_still_a_cancellation() -> None:
    approvals = Approvals(wait_timeout_ms=5_000)
    started = asyncio.Event()

    async def never(request: Any, next: Any) -> Any:
        started.set()
        await asyncio.Event().wait()

    approvals.answerer(never)
    runtime, _ = runtime_with_tool(approvals)
    controller = AbortController()
    task = asyncio.ensure_future(runtime.execute(call("x", controller.signal)))
    await started.wait()
    controller.abort("user stop")
    assert (await task).error.info.code == "ABORTED_BEFORE_DISPATCH"  # type: ignore[union-attr]


async def test_an_unbounded_wait_outlasts_any_deadline() -> None:
    approvals = Approvals(wait_timeout_ms=UNBOUNDED)

    async def thinks(request: Any, next: Any) -> str:
        await asyncio.sleep(0.05)
        return "allowed-once"

    approvals.answerer(thinks)
    runtime, _ = runtime_with_tool(approvals)
    assert (await runtime.execute(call("x"))).value == "deleted x"


async def test_a_program_clock_on_the_call_is_paused_exactly_while_the_person_decides() -> None:
    from toolrt.codemode import RunClock

    clock = RunClock()
    approvals = Approvals()
    seen: list[bool] = []

    async def person(request: Any, next: Any) -> str:
        seen.append(clock.paused)
        await asyncio.sleep(0.05)
        return "allowed-once"

    approvals.answerer(person)
    runtime, _ = runtime_with_tool(approvals)
    paused_body: list[bool] = []

    async def body(args: Any, ctx: Any) -> str:
        paused_body.append(clock.paused)
        return "ran"

    runtime.register(string_tool("other", body))
    runtime.on("tools/pre-execute", lambda execution, next: Ask("check"), prepend=True)
    result = await runtime.execute(
        ToolExecutionInput(
            call_id="c1",
            name="other",
            arguments={},
            signal=AbortController().signal,
            agent="a",
            wait_clock=clock,
        )
    )
    assert result.value == "ran"
    assert seen == [True] and paused_body == [False]
    assert not clock.paused and clock.paused_seconds() >= 0.04
