"""The agent loop end to end: the real ``openai`` client against a local scripted server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fake_openai_server import FakeOpenAIServer
from toolrt import AbortController, Ask, ToolRuntime, define_tool, tool
from toolrt._execution import ToolRunContext
from toolrt.loop import SessionLog, derive_messages
from toolrt.loop._agent import Agent
from toolrt.loop._messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from toolrt.loop._openai_model import OpenAIChatModel
from toolrt.loop._scripted_model import ScriptedModel
from toolrt.policies._approvals import ApprovalRule, Approvals, rule_answerer
from toolrt.policies._timeout import install_timeout_policy


def build_runtime(**kwargs: Any) -> tuple[ToolRuntime, list[str]]:
    runtime = ToolRuntime(**kwargs)
    trace: list[str] = []

    @tool(is_concurrency_safe=lambda args: True)
    async def read_note(name: str) -> str:
        """Read a note."""
        trace.append(f"start:{name}")
        await asyncio.sleep(0.03 if name == "slow" else 0)
        trace.append(f"end:{name}")
        return f"note {name}"

    @tool
    async def delete_note(name: str) -> str:
        """Delete a note."""
        trace.append(f"delete:{name}")
        return f"deleted {name}"

    runtime.register(read_note)
    runtime.register(delete_note)
    return runtime, trace


def openai_model(server: FakeOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel("fake-model", base_url=server.base_url, api_key="test")


def event_types(session: SessionLog) -> list[str]:
    return [event.type for event in session.events()]


def tool_results(session: SessionLog) -> list[dict[str, Any]]:
    return [dict(event.data) for event in session.events() if event.type == "tool/result"]


async def test_parallel_calls_run_concurrently_and_results_return_in_call_order(
    server: FakeOpenAIServer,
) -> None:
    runtime, trace = build_runtime()
    server.enqueue_tool_calls(
        [("c1", "read_note", '{"name": "slow"}'), ("c2", "read_note", '{"name": "fast"}')], stream=True
    )
    server.enqueue_text("Both notes read.", stream=True)
    agent = Agent(runtime, openai_model(server), instructions="Be brief.")
    result = await agent.run_turn("read both notes")
    assert result.reason == "stop" and result.text == "Both notes read." and result.steps == 2
    assert trace.index("start:fast") < trace.index("end:slow")  # overlapped
    second_request = server.requests[1]
    tool_messages = [m for m in second_request["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
    assert [m["content"] for m in tool_messages] == ["note slow", "note fast"]
    assert second_request["messages"][0] == {"role": "system", "content": "Be brief."}
    assert {t["function"]["name"] for t in second_request["tools"]} == {"read_note", "delete_note"}
    assert [r["call_id"] for r in tool_results(agent.session)] == ["c1", "c2"]


async def test_malformed_arguments_and_unknown_tools_come_back_as_results_the_model_reads(
    server: FakeOpenAIServer,
) -> None:
    runtime, trace = build_runtime()
    server.enqueue_tool_calls([("c1", "read_note", '{"name": "x",'), ("c2", "send_email", '{"to": "boss"}')])
    server.enqueue_text("Sorry.")
    agent = Agent(runtime, openai_model(server))
    result = await agent.run_turn("go")
    assert result.reason == "stop"
    assert trace == []
    contents = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert contents[0].startswith("Error: invalid arguments: arguments are not valid JSON")
    assert contents[1] == 'Error: unknown tool "send_email"'
    calls = [event.data for event in agent.session.events() if event.type == "tool/call"]
    assert calls[0]["arguments"] == '{"name": "x",' and calls[0]["parsed_arguments"] is None


async def test_cancellation_mid_stream_ends_the_turn_with_no_dangling_call(server: FakeOpenAIServer) -> None:
    runtime, trace = build_runtime()
    server.enqueue_tool_calls([("c1", "read_note", '{"name": "a"}')], stream=True, hang_after=2)
    agent = Agent(runtime, openai_model(server))
    controller = AbortController()
    task = asyncio.ensure_future(agent.run_turn("go", signal=controller.signal))
    await asyncio.sleep(0.3)
    controller.abort("user pressed stop")
    result = await asyncio.wait_for(task, 5)
    assert result.reason == "aborted"
    assert "tool/call" not in event_types(agent.session)  # the unfinished message was never logged
    assert trace == []
    assert await asyncio.to_thread(server.wait_for_disconnect, 5.0)


async def test_cancellation_mid_tool_gives_every_call_exactly_one_result(server: FakeOpenAIServer) -> None:
    runtime = ToolRuntime()
    started = asyncio.Event()

    @tool
    async def wait_for_stop(ctx: ToolRunContext) -> str:
        """Wait until stopped."""
        started.set()
        await ctx.signal.wait()
        return "stopped"

    runtime.register(wait_for_stop)
    server.enqueue_tool_calls([("c1", "wait_for_stop", "{}"), ("c2", "wait_for_stop", "{}")])
    agent = Agent(runtime, openai_model(server))
    controller = AbortController()
    task = asyncio.ensure_future(agent.run_turn("go", signal=controller.signal))
    await started.wait()
    controller.abort("stop")
    result = await task
    assert result.reason == "aborted"
    results = tool_results(agent.session)
    assert [(r["call_id"], r["error"]["info"]["code"]) for r in results] == [
        ("c1", "ABORTED"),
        ("c2", "ABORTED_BEFORE_DISPATCH"),
    ]
    messages = derive_messages(agent.session.events())
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
    ]
    assert event_types(agent.session)[-1] == "turn/end"


async def test_cancelling_the_awaiting_task_leaves_no_call_without_a_result(server: FakeOpenAIServer) -> None:
    runtime = ToolRuntime()
    started = asyncio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    runtime.register(hang)
    server.enqueue_tool_calls([("c1", "hang", "{}"), ("c2", "hang", "{}")])
    agent = Agent(runtime, openai_model(server))
    task = asyncio.ensure_future(agent.run_turn("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    calls = [e.data["call_id"] for e in agent.session.events() if e.type == "tool/call"]
    results = [e.data["call_id"] for e in agent.session.events() if e.type == "tool/result"]
    assert calls == results == ["c1", "c2"]
    assert event_types(agent.session)[-1] == "turn/end"
    assert [e.data["reason"] for e in agent.session.events() if e.type == "turn/end"] == ["aborted"]


async def test_approval_ask_allow_and_deny_are_audited_in_the_session(server: FakeOpenAIServer) -> None:
    approvals = Approvals()
    approvals.answerer(
        rule_answerer(
            [
                ApprovalRule("delete_note", "allowed-once", when=lambda args: args["name"] == "old"),
                ApprovalRule("delete_note", "rejected"),
            ]
        )
    )
    runtime, trace = build_runtime(approval=approvals)
    runtime.on(
        "tools/pre-execute",
        lambda execution, next: Ask("deletes need a human") if execution.name == "delete_note" else next(),
    )
    server.enqueue_tool_calls(
        [("c1", "delete_note", '{"name": "old"}'), ("c2", "delete_note", '{"name": "precious"}')]
    )
    server.enqueue_text("Done.")
    agent = Agent(runtime, openai_model(server), key="agent-7")
    await agent.run_turn("clean up")
    assert trace == ["delete:old"]
    contents = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert contents == ["deleted old", 'Error: the user rejected tool "delete_note"']
    audit = [
        (e.type, e.data.get("outcome")) for e in agent.session.events() if e.type.startswith("approval/")
    ]
    assert audit == [
        ("approval/asked", None),
        ("approval/decided", "allowed-once"),
        ("approval/asked", None),
        ("approval/decided", "rejected"),
    ]
    asked = next(e.data for e in agent.session.events() if e.type == "approval/asked")
    assert asked["arguments"] == {"name": "old"} and asked["agent"] == "agent-7"


async def test_a_tool_timeout_reaches_the_model_as_tool_timeout(server: FakeOpenAIServer) -> None:
    runtime = ToolRuntime()

    async def slow(args: Any, ctx: Any) -> str:
        await ctx.signal.wait()
        return "too late"

    runtime.register(
        define_tool(
            name="slow",
            description="Slow.",
            parameters={},
            output={"schema": {"type": "string"}},
            execute=slow,
            timeout_ms=30,
        )
    )
    install_timeout_policy(runtime)
    server.enqueue_tool_calls([("c1", "slow", "{}")])
    server.enqueue_text("It timed out.")
    agent = Agent(runtime, openai_model(server))
    await agent.run_turn("go")
    assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"] == [
        "Error: tool call timed out after 30ms"
    ]
    assert tool_results(agent.session)[0]["error"]["info"]["code"] == "TOOL_TIMEOUT"


async def test_step_budget_and_conclude_turn_end_the_turn() -> None:
    runtime = ToolRuntime()

    @tool
    async def finish(ctx: ToolRunContext) -> str:
        """Finish the task."""
        ctx.conclude_turn()
        return "done"

    @tool
    async def loop() -> str:
        """Keep going."""
        return "again"

    runtime.register(finish)
    runtime.register(loop)
    looping = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall(f"l{i}", "loop", "{}"),)) for i in range(3)]
    )
    budget = await Agent(runtime, looping, key="a1", max_steps=3).run_turn("spin")
    assert budget.reason == "step-budget" and budget.steps == 3
    concluding = ScriptedModel([AssistantMessage(tool_calls=(ToolCall("f1", "finish", "{}"),))])
    concluded = await Agent(runtime, concluding, key="a2").run_turn("finish up")
    assert concluded.reason == "concluded" and concluded.steps == 1


async def test_a_crash_torn_log_resumes_the_conversation_without_losing_earlier_events(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    runtime, _ = build_runtime()
    server.enqueue_tool_calls([("c1", "read_note", '{"name": "a"}')])
    server.enqueue_text("First answer.")
    with SessionLog.create(path) as session:
        agent = Agent(runtime, openai_model(server), session=session)
        await agent.run_turn("first question")
        agent.close()
    good_lines = path.read_text(encoding="utf-8").splitlines()
    with path.open("a", encoding="utf-8") as handle:  # a crash cut the next write
        handle.write('{"seq": 999, "type": "model/us')
    read = SessionLog.read(path)
    assert read.torn is not None and len(read.events) == len(good_lines)
    server.enqueue_text("Second answer.")
    with SessionLog.resume(path) as session:
        assert session.recovered_torn_line is not None
        agent = Agent(runtime, openai_model(server), session=session)
        result = await agent.run_turn("second question")
    assert result.text == "Second answer."
    replayed = server.requests[-1]["messages"]
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool", "assistant", "user"]
    assert replayed[0]["content"] == "first question" and replayed[-1]["content"] == "second question"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line) for line in lines)
    assert lines[: len(good_lines)] == good_lines


async def test_additional_contexts_follow_the_batch_of_results() -> None:
    from toolrt import Accept, user_message

    runtime, _ = build_runtime()
    runtime.on(
        "tools/post-execute",
        lambda execution, result, next: Accept(
            additional_contexts=[user_message(f"x-{execution.call_id}", "note")]
        ),
    )
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("c1", "read_note", '{"name":"a"}'),
                    ToolCall("c2", "read_note", '{"name":"b"}'),
                )
            ),
            AssistantMessage(text="ok"),
        ]
    )
    agent = Agent(runtime, model)
    await agent.run_turn("go")
    second = model.requests[1].messages
    kinds = [
        (type(m).__name__, getattr(m, "call_id", None) or getattr(m, "id", None))
        for m in second
        if isinstance(m, ToolResultMessage | UserMessage)
    ]
    assert kinds == [
        ("UserMessage", None),
        ("ToolResultMessage", "c1"),
        ("ToolResultMessage", "c2"),
        ("UserMessage", "x-c1"),
        ("UserMessage", "x-c2"),
    ]
    assert derive_messages(agent.session.events()) == [
        *list(second),
        AssistantMessage(text="ok", stop_reason=None),
    ]


async def test_cancelling_the_awaiting_task_during_run_code_drains_the_bridge_before_turn_end() -> None:
    from code_mode_fakes import FakeRuntime, Gated, call

    fake = FakeRuntime()
    runtime = ToolRuntime(mode="code", code_runtime=fake)
    gated = Gated(runtime, "slow", safe=True)
    program_started = asyncio.Event()

    async def program(request: Any) -> Any:
        program_started.set()
        await asyncio.gather(call(request, "slow", {"id": "a"}), call(request, "slow", {"id": "b"}))

    fake.behavior = program
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("r1", "run_code", '{"code":"p","description":"d"}'),)), "done"]
    )
    agent = Agent(runtime, model)
    task = asyncio.ensure_future(agent.run_turn("go"))
    await program_started.wait()
    while len(gated.parked()) < 2:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    types = event_types(agent.session)
    assert types[-1] == "turn/end"
    assert types.count("tool/code-dispatch") == 2
    assert [e.data["call_id"] for e in agent.session.events() if e.type == "tool/result"] == ["r1"]
    assert gated.live == 0
    for _ in range(20):
        await asyncio.sleep(0)
    assert event_types(agent.session) == types  # nothing lands after turn/end
    # The next turn starts from a clean conversation.
    result = await agent.run_turn("again")
    assert result.reason == "stop"


async def test_cancelling_a_turn_drains_started_bodies_for_the_runtime_grace_at_most() -> None:
    # The scheduler's drain is the runtime's timeout grace (runtime.stages.drain_s), not a constant:
    # a cleanup that outlasts it is left running (and reported), and the turn still ends with one
    # result per call.
    from toolrt.policies import install_default_deadline

    runtime = ToolRuntime()
    install_default_deadline(runtime, grace_ms=40)
    started = asyncio.Event()
    finished = asyncio.Event()

    @tool(is_concurrency_safe=lambda args: True)
    async def stubborn() -> str:
        """Cleans up for too long."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            try:
                await asyncio.sleep(0.6)
            finally:
                finished.set()
        return "never"

    runtime.register(stubborn)
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=(ToolCall("c1", "stubborn", "{}"), ToolCall("c2", "stubborn", "{}"))),
            "ok",
        ]
    )
    agent = Agent(runtime, model)
    task = asyncio.ensure_future(agent.run_turn("go"))
    await started.wait()
    await asyncio.sleep(0)
    began = asyncio.get_running_loop().time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert asyncio.get_running_loop().time() - began < 0.45
    assert not finished.is_set()
    calls = [e.data["call_id"] for e in agent.session.events() if e.type == "tool/call"]
    results = [e.data["call_id"] for e in agent.session.events() if e.type == "tool/result"]
    assert calls == results == ["c1", "c2"]
    assert event_types(agent.session)[-1] == "turn/end"
    await asyncio.wait_for(finished.wait(), 5)
    assert (await agent.run_turn("again")).reason == "stop"


async def test_cancelling_a_turn_bounds_the_drain_of_untimed_bodies_by_the_grace_too() -> None:
    # A tool with no deadline (UNBOUNDED) is not timed by the pipeline, so only the scheduler's own
    # drain bound (runtime.stages.drain_s) stops the wait for its cleanup.
    from toolrt import UNBOUNDED
    from toolrt.policies import install_default_deadline

    runtime = ToolRuntime()
    install_default_deadline(runtime, grace_ms=40)
    started = asyncio.Event()
    cleaning = asyncio.Event()

    @tool(timeout_ms=UNBOUNDED)
    async def untimed() -> str:
        """Cleans up for too long, and has no deadline."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await asyncio.sleep(3)
        return "never"

    runtime.register(untimed)
    model = ScriptedModel([AssistantMessage(tool_calls=(ToolCall("c1", "untimed", "{}"),)), "ok"])
    agent = Agent(runtime, model)
    task = asyncio.ensure_future(agent.run_turn("go"))
    await started.wait()
    began = asyncio.get_running_loop().time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaning.is_set()
    assert asyncio.get_running_loop().time() - began < 1.5  # the grace, not the 3 s cleanup
    calls = [e.data["call_id"] for e in agent.session.events() if e.type == "tool/call"]
    results = [e.data["call_id"] for e in agent.session.events() if e.type == "tool/result"]
    assert calls == results == ["c1"]


async def test_a_reply_with_lone_surrogates_is_logged_and_its_arguments_refused(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Text is valid UTF-8 end to end: a provider's ``\\ud800`` escape (a lone surrogate once decoded)
    in the model's text becomes U+FFFD, and in a call's arguments it stays a surrogate inside the
    parsed value, so the pipeline refuses the call as INVALID_ARGS; the turn and the log survive."""
    path = tmp_path / "session.jsonl"
    runtime, _ = build_runtime()
    server.enqueue_tool_calls([("c1", "read_note", '{"name": "a' + chr(0xD800) + '"}')])
    server.enqueue_text("Answer " + chr(0xDCFF) + " here.")
    with SessionLog.create(path) as session:
        agent = Agent(runtime, openai_model(server), session=session)
        result = await agent.run_turn("first question")
        agent.close()
    assert result.text == "Answer \ufffd here."
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1 and results[0].is_error
    assert "lone surrogate" in results[0].content[0]["text"], results[0].content
    for line in path.read_bytes().splitlines():
        json.loads(line.decode("utf-8"))  # every line is valid UTF-8 JSON
