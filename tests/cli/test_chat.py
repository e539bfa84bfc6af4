"""``toolrt chat`` in a real terminal (a pty, with pexpect), against local model servers (PF9–PF13).

The installed command runs as a child process; the model is a scripted local server spoken to by
the real client: :mod:`fake_openai_server` through ``openai`` (via ``OpenAIChatModel``) and
:mod:`fake_anthropic_server` through ``anthropic`` (via ``AnthropicModel``). What the servers
received is checked as well as what the terminal showed, and the workspace on disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import TOOLRT, one_line, toolrt

from fake_anthropic_server import FakeAnthropicServer
from fake_anthropic_server import Usage as AnthropicUsage
from fake_openai_server import FakeOpenAIServer

pexpect = pytest.importorskip("pexpect")

PROMPT = "you> "
TIMEOUT = 60


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    # Only the fs tools: write asks for approval (the default [policies] ask), read does not.
    (tmp_path / "toolrt.toml").write_text("[tools]\nbuiltin = ['fs']\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return tmp_path


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def claude() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def spawn(workspace: Path, *arguments: str, env: dict[str, str] | None = None) -> Any:
    if not TOOLRT.exists():
        pytest.skip("the toolrt console script is not installed")
    environment = {**os.environ, "OPENAI_API_KEY": "test-key", "ANTHROPIC_API_KEY": "test-key", **(env or {})}
    return pexpect.spawn(
        str(TOOLRT),
        ["chat", *arguments],
        cwd=str(workspace),
        env=environment,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 80),
    )


def chat_with(server: FakeOpenAIServer, workspace: Path, *arguments: str) -> Any:
    return spawn(workspace, "--base-url", server.base_url, "--model", "fake-model", *arguments)


def finish(child: Any) -> str:
    """End the session with Ctrl-D; what the terminal showed since the last expect."""
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return str(child.before)


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [message for message in body["messages"] if message["role"] == "tool"]


def test_a_call_that_asks_runs_on_y_and_not_on_n(openai_server: FakeOpenAIServer, workspace: Path) -> None:
    """PF9: the call card, the approval prompt; ``y`` writes the file and draws its result card, ``n``
    leaves the disk alone and the model reads the refusal."""
    openai_server.enqueue_tool_calls(
        [("call_1", "write", json.dumps({"path": "yes.txt", "content": "ok\n"}))]
    )
    openai_server.enqueue_text("I wrote yes.txt.")
    openai_server.enqueue_tool_calls([("call_2", "write", json.dumps({"path": "no.txt", "content": "x\n"}))])
    openai_server.enqueue_text("Understood, I left it.")
    child = chat_with(openai_server, workspace)
    child.expect_exact(PROMPT)
    child.sendline("please write yes.txt")
    child.expect_exact("write ▸ Write yes.txt")  # the call card, before the question
    child.expect_exact("allow write")
    child.sendline("y")
    child.expect_exact("write ▸ Created yes.txt")  # the result card
    child.expect_exact("assistant> I wrote yes.txt.")
    child.expect_exact(PROMPT)
    assert (workspace / "yes.txt").read_text(encoding="utf-8") == "ok\n"

    child.sendline("now write no.txt")
    child.expect_exact("allow write")
    child.sendline("n")
    child.expect_exact("Understood, I left it.")
    child.expect_exact(PROMPT)
    finish(child)
    assert not (workspace / "no.txt").exists()
    refused = tool_messages(openai_server.requests[3])[-1]
    assert refused["tool_call_id"] == "call_2"
    assert refused["content"] == 'Error: the user rejected tool "write"'
    approved = tool_messages(openai_server.requests[1])[0]
    assert approved["tool_call_id"] == "call_1" and "yes.txt" in json.dumps(approved)


def test_ctrl_c_cancels_a_slow_reply_and_the_next_turn_works(
    openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """PF10: Ctrl-C during a streaming reply closes the stream and cancels the turn; the session goes
    on; Ctrl-C twice at the prompt ends it with status 0."""
    openai_server.enqueue_text("one two three four five", hang_after=3)  # "one" then silence
    openai_server.enqueue_text("back again")
    child = chat_with(openai_server, workspace)
    child.expect_exact(PROMPT)
    child.sendline("talk slowly")
    child.expect_exact("assistant> one")
    child.sendintr()
    child.expect_exact("(turn cancelled)")
    assert openai_server.wait_for_disconnect(TIMEOUT)  # the HTTP stream was closed
    child.expect_exact(PROMPT)
    child.sendline("hello again")
    child.expect_exact("assistant> back again")
    child.expect_exact(PROMPT)
    child.sendintr()
    child.expect_exact("Ctrl-C again")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # The cancelled turn left no half answer: the next request holds both user turns, no "one".
    second = openai_server.requests[1]["messages"]
    users = [message["content"] for message in second if message["role"] == "user"]
    assert users == ["talk slowly", "hello again"]
    assert all(
        "one" not in str(message.get("content")) for message in second if message["role"] == "assistant"
    )


def test_ctrl_c_at_an_approval_prompt_cancels_the_turn(
    openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """PF10: Ctrl-C while a call waits for approval cancels the turn: the call does not run, the
    log holds its result, and the next prompt works."""
    openai_server.enqueue_tool_calls([("call_1", "write", json.dumps({"path": "never.txt", "content": "x"}))])
    openai_server.enqueue_text("Fine.")
    log = workspace / "session.jsonl"
    child = chat_with(openai_server, workspace, "--session", str(log))
    child.expect_exact(PROMPT)
    child.sendline("write never.txt")
    child.expect_exact("allow write")
    child.sendintr()
    child.expect_exact("(turn cancelled)")
    child.expect_exact(PROMPT)
    child.sendline("ok")
    child.expect_exact("assistant> Fine.")
    child.expect_exact(PROMPT)
    finish(child)
    assert not (workspace / "never.txt").exists()
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    results = [event["data"] for event in events if event["type"] == "tool/result"]
    assert [result["call_id"] for result in results] == ["call_1"] and results[0]["is_error"]
    ends = [event["data"]["reason"] for event in events if event["type"] == "turn/end"]
    assert ends == ["aborted", "stop"]


def test_a_run_code_call_shows_its_live_line_and_summary(
    openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """PF9: in Code Mode the program's card, a live line while it runs, its sub-calls summed up."""
    (workspace / "toolrt.toml").write_text(
        "mode = 'code'\n[tools]\nbuiltin = ['fs-readonly']\n[policies]\nask = []\n", encoding="utf-8"
    )
    (workspace / "app.py").write_text("print(1)\n", encoding="utf-8")
    program = 'found = await tools.glob({"pattern": "*.py"})\nprint(len(found["paths"]), "files")'
    openai_server.enqueue_tool_calls(
        [("call_1", "run_code", json.dumps({"code": program, "description": "count"}))]
    )
    openai_server.enqueue_text("There is one file.")
    child = chat_with(openai_server, workspace)
    child.expect_exact(PROMPT)
    child.sendline("how many python files?")
    child.expect_exact("run_code ▸ count")
    child.expect_exact("⏵ run_code")
    child.expect(r"run_code: \d+\.\ds, 1 sub-calls \(glob\)")
    child.expect_exact("1 files")  # the result card
    child.expect_exact("assistant> There is one file.")
    child.expect_exact(PROMPT)
    finish(child)


def test_a_resumed_session_continues_the_earlier_conversation(
    openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """PF11: ``--session`` logs; ``--resume`` shows the earlier turns and the model receives them."""
    log = workspace / "session.jsonl"
    openai_server.enqueue_text("Hello Ada.")
    child = chat_with(openai_server, workspace, "--session", str(log))
    child.expect_exact(PROMPT)
    child.sendline("my name is Ada")
    child.expect_exact("Hello Ada.")
    child.expect_exact(PROMPT)
    finish(child)
    assert log.exists()

    openai_server.enqueue_text("Your name is Ada.")
    child = chat_with(openai_server, workspace, "--resume", str(log))
    child.expect_exact("my name is Ada")  # the earlier conversation is shown
    child.expect_exact("(resumed: 1 earlier turn)")
    child.expect_exact(PROMPT)
    child.sendline("what is my name?")
    child.expect_exact("Your name is Ada.")
    child.expect_exact(PROMPT)
    finish(child)
    sent = [(m["role"], m["content"]) for m in openai_server.requests[1]["messages"] if m["role"] != "system"]
    assert [role for role, _ in sent] == ["user", "assistant", "user"]
    assert "my name is Ada" in json.dumps(sent[0]) and sent[1][1] == "Hello Ada."
    assert "what is my name?" in json.dumps(sent[2])
    types = [json.loads(line)["type"] for line in log.read_text(encoding="utf-8").splitlines()]
    assert types.count("turn/start") == 2
    replayed = toolrt("replay", str(log), cwd=workspace)  # the chat's log is an ordinary session log
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.index("Hello Ada.") < replayed.stdout.index("Your name is Ada.")


def test_a_provider_error_ends_the_turn_not_the_session(
    openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    """PF12: a provider error during a turn is one line naming it; the next turn works."""
    openai_server.enqueue_error(401, "Incorrect API key provided")
    openai_server.enqueue_text("Now it works.")
    child = chat_with(openai_server, workspace)
    child.expect_exact(PROMPT)
    child.sendline("hello")
    child.expect(r"error: AuthenticationError: .*Incorrect API key provided")
    child.expect_exact(PROMPT)
    child.sendline("again")
    child.expect_exact("assistant> Now it works.")
    child.expect_exact(PROMPT)
    finish(child)


def test_an_anthropic_chat_reads_a_file_and_answers(claude: FakeAnthropicServer, workspace: Path) -> None:
    """PF13: ``--provider anthropic``: the tool call, its read card, the answer, the cache figures."""
    claude.enqueue_tool_calls([("toolu_1", "read", json.dumps({"path": "notes.txt"}))], text="Reading.")
    claude.enqueue_text("The answer is 42.", usage=AnthropicUsage(5, 6, cache_read=700))
    child = spawn(
        workspace, "--provider", "anthropic", "--base-url", claude.base_url, "--model", "fake-claude"
    )
    child.expect_exact(PROMPT)
    child.sendline("what is in notes.txt?")
    child.expect_exact("the answer is 42")  # the read card shows the file
    child.expect_exact("assistant> The answer is 42.")
    child.expect_exact("cache 700 read")
    child.expect_exact(PROMPT)
    finish(child)
    first, second = claude.requests
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert "the answer is 42" in json.dumps(result)


@pytest.mark.parametrize(
    ("arguments", "env", "says"),
    [
        (["--model", "m"], {"OPENAI_API_KEY": ""}, "no API key: set OPENAI_API_KEY in the environment"),
        (["--provider", "anthropic", "--model", "m"], {"ANTHROPIC_API_KEY": ""}, "set ANTHROPIC_API_KEY"),
        ([], {"OPENAI_API_KEY": "k"}, "no model named"),
        (["--model", "m", "--resume", "missing.jsonl"], {"OPENAI_API_KEY": "k"}, "missing.jsonl"),
    ],
)
def test_mistakes_are_one_line(
    workspace: Path, arguments: list[str], env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PF12: a missing key, no model, a resume file that does not exist: one line, exit 2."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert says in one_line(toolrt("chat", *arguments, cwd=workspace), "toolrt chat: error: ")


def test_a_session_file_that_exists_is_refused(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PF12: ``--session`` never appends to an old log: one line naming the file, exit 2."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    log = workspace / "old.jsonl"
    log.write_text(
        '{"seq":0,"type":"turn/start","time":0,"data":{"turn":0,"agent":null}}\n', encoding="utf-8"
    )
    line = one_line(
        toolrt("chat", "--model", "m", "--session", str(log), cwd=workspace), "toolrt chat: error: "
    )
    assert "old.jsonl" in line
