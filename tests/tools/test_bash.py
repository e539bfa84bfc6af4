"""``bash`` in the foreground: exit codes, signals, deadlines, cancellation, output, cwd and cards.

Every test runs real ``/bin/bash`` process trees. A process left behind is found by a unique marker
in its command line (``sleep <marker>``), read from ``/proc``: nothing is trusted to say "I died".
Unsandboxed (``sandbox=False``) so they run wherever bash does; the confined path is
``tests/sandbox/test_bash_confinement.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bash_helpers import marker, survivors, until_running
from toolrt import AbortController, ToolRuntime
from toolrt.tools import BashTools, install_bash


@pytest.fixture(name="runtime")
def bash_runtime(tmp_path: Path) -> Iterator[ToolRuntime]:
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False)
    yield runtime
    runtime.close()


def text(result: Any) -> str:
    return "".join(block["text"] for block in result.content)


async def test_exit_codes_are_answers_not_failures(runtime: ToolRuntime) -> None:
    """BA1: the value carries the exit code; a nonzero exit is a successful call that says so."""
    ok = await runtime.call("bash", {"command": "echo hello"})
    assert not ok.is_error
    assert ok.value["kind"] == "foreground"
    assert (ok.value["exitCode"], ok.value["signal"], ok.value["output"]) == (0, None, "hello\n")
    assert text(ok) == "hello\n[exit code 0]"
    failed = await runtime.call("bash", {"command": "echo oops >&2; exit 7"})
    assert not failed.is_error
    assert (failed.value["exitCode"], failed.value["output"]) == (7, "oops\n")
    assert text(failed).endswith("[exit code 7]")


async def test_a_signal_is_reported_by_name(runtime: ToolRuntime) -> None:
    """BA1: a command killed by a signal reports the signal, not an exit code."""
    result = await runtime.call("bash", {"command": "kill -SEGV $$"})
    assert not result.is_error
    assert (result.value["exitCode"], result.value["signal"], result.value["timedOut"]) == (
        None,
        "SIGSEGV",
        False,
    )
    assert text(result).endswith("[killed by SIGSEGV]")


async def test_timeout_kills_the_whole_group_including_a_sigterm_ignoring_grandchild(
    runtime: ToolRuntime,
) -> None:
    """BA2: on its deadline the group gets SIGTERM then SIGKILL; no process of it survives."""
    mark = marker()
    command = f"(trap '' TERM; exec sleep {mark}) & sleep {mark}1; wait"
    started = time.monotonic()
    result = await runtime.call("bash", {"command": command, "timeout_ms": 300})
    assert result.value["timedOut"] is True
    assert result.value["signal"] == "SIGTERM"  # the shell died of the first signal
    assert "timed out after 300 ms; the whole process group was killed" in text(result)
    assert survivors(mark) == []
    # The grandchild ignored SIGTERM, so it took the grace and SIGKILL (no time is asserted beyond that).
    assert time.monotonic() - started >= 0.3


async def test_the_timeout_argument_is_capped(tmp_path: Path) -> None:
    """BA2: a call may ask for a longer deadline, up to the cap, never past it."""
    bash = BashTools(tmp_path, sandbox=False, timeout_ms=200)
    runtime = ToolRuntime()
    for definition in bash.definitions():
        runtime.register(definition)
    result = await runtime.call("bash", {"command": "sleep 0.5; echo done", "timeout_ms": 2_000})
    assert (result.value["exitCode"], result.value["timeoutMs"]) == (0, 2_000)
    capped = await runtime.call("bash", {"command": "true", "timeout_ms": 10**9})
    assert capped.value["timeoutMs"] == bash.max_timeout_ms == 600_000
    refused = await runtime.call("bash", {"command": "true", "timeout_ms": 0})
    assert refused.is_error and refused.error.info is not None and refused.error.info.code == "INVALID_ARGS"
    runtime.close()


async def test_task_cancellation_kills_the_group_before_it_propagates(runtime: ToolRuntime) -> None:
    """BA3: task.cancel() while a command runs: the group is dead when CancelledError arrives."""
    mark = marker()
    call = asyncio.ensure_future(runtime.call("bash", {"command": f"(trap '' TERM; sleep {mark}) & wait"}))
    await until_running(mark)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 10)
    assert survivors(mark) == []


async def test_the_abort_signal_kills_the_group_and_the_call_is_aborted(runtime: ToolRuntime) -> None:
    """BA3: the caller's abort signal kills the group; the result is ABORTED (K7)."""
    mark = marker()
    controller = AbortController()
    call = asyncio.ensure_future(
        runtime.call("bash", {"command": f"sleep {mark} & sleep {mark}1"}, signal=controller.signal)
    )
    await until_running(mark)
    controller.abort("user pressed Ctrl-C")
    result = await asyncio.wait_for(call, 10)
    assert result.is_error and result.error.info is not None and result.error.info.code == "ABORTED"
    assert survivors(mark) == []


async def test_what_the_shell_leaves_behind_is_killed_when_it_exits(runtime: ToolRuntime) -> None:
    """BA2: a foreground command is its group: a process it left running dies when it returns."""
    mark = marker()
    result = await runtime.call("bash", {"command": f"sleep {mark} & echo started"})
    assert (result.value["exitCode"], result.value["output"]) == (0, "started\n")
    assert survivors(mark) == []


async def test_long_output_keeps_head_and_tail_with_a_visible_note(tmp_path: Path) -> None:
    """BA4: output over the cap keeps its head and tail, the note says how much there was."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False, max_output_chars=1_000)
    result = await runtime.call("bash", {"command": "echo FIRST; seq 1 200000; echo LAST"})
    output = result.value["output"]
    assert result.value["truncated"] is True
    assert output.startswith("FIRST\n1\n2\n")
    assert output.endswith("199999\n200000\nLAST\n")
    total = len("FIRST\nLAST\n") + sum(len(f"{n}\n") for n in range(1, 200_001))
    assert (
        f"[… output truncated: {total:,} bytes in total; the first 500 and the last 500 characters" in output
    )
    assert len(output) < 1_300
    short = await runtime.call("bash", {"command": "seq 1 5"})
    assert short.value["truncated"] is False
    runtime.close()


async def test_binary_and_invalid_utf8_output_is_text_with_replacements(runtime: ToolRuntime) -> None:
    """BA5: undecodable bytes become U+FFFD; an encoded surrogate never reaches the model as one."""
    result = await runtime.call(
        "bash", {"command": r"printf 'a\xff\xfeb\xed\xa0\x80c\x00d'; head -c 3000 /bin/sh"}
    )
    assert not result.is_error
    output = result.value["output"]
    assert output.startswith("a\ufffd\ufffdb\ufffd\ufffd\ufffdc\x00d")
    assert not any(0xD800 <= ord(char) <= 0xDFFF for char in output)
    json.dumps(result.value, ensure_ascii=False).encode("utf-8")  # strictly encodable
    text(result).encode("utf-8")


async def test_a_lone_surrogate_in_the_command_is_refused_before_anything_runs(
    runtime: ToolRuntime, tmp_path: Path
) -> None:
    """BA5 / CL4: a command holding a lone surrogate is INVALID_ARGS; nothing is started."""
    result = await runtime.call("bash", {"command": "touch made\udc80"})
    assert result.is_error and result.error.info is not None and result.error.info.code == "INVALID_ARGS"
    assert list(tmp_path.iterdir()) == []


async def test_cwd_is_confined_to_the_workspace(runtime: ToolRuntime, tmp_path: Path) -> None:
    """BA6: cwd resolves inside the workspace; `..`, absolute paths and symlinks out are refused."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "out").symlink_to("/")
    inside = await runtime.call("bash", {"command": "pwd", "cwd": "sub"})
    assert inside.value["output"].strip() == str(tmp_path / "sub")
    assert inside.value["cwd"] == "sub"
    absolute_inside = await runtime.call("bash", {"command": "pwd", "cwd": str(tmp_path / "sub")})
    assert absolute_inside.value["exitCode"] == 0
    for escape in ("..", "/etc", "out", "sub/../../", "out/tmp"):
        refused = await runtime.call("bash", {"command": "touch escaped", "cwd": escape})
        assert refused.is_error, escape
        assert refused.error.info is not None and refused.error.info.code == "PATH_OUTSIDE_ROOT"
        assert "outside the allowed directory" in text(refused)
    missing = await runtime.call("bash", {"command": "pwd", "cwd": "nope"})
    assert (
        missing.is_error and missing.error.info is not None and missing.error.info.code == "NOT_A_DIRECTORY"
    )
    nul = await runtime.call("bash", {"command": "pwd", "cwd": "a\x00b"})
    assert nul.is_error and nul.error.info is not None and nul.error.info.code == "INVALID_ARGS"


async def test_bad_arguments_are_structured_errors(runtime: ToolRuntime) -> None:
    """BA6: an empty command, a NUL, a wrong type are INVALID_ARGS results, not crashes."""
    for arguments in ({"command": "   "}, {"command": "echo a\x00b"}, {"command": 3}, {}):
        result = await runtime.call("bash", arguments)
        assert result.is_error and result.error.info is not None, arguments
        assert result.error.info.code == "INVALID_ARGS", arguments


async def test_bash_is_exclusive_and_the_job_readers_are_concurrency_safe(runtime: ToolRuntime) -> None:
    """BA7: bash and job_kill run alone; job_output and job_list may overlap other safe calls."""
    safe = {
        name: runtime.get(name).is_concurrency_safe for name in ("bash", "job_output", "job_kill", "job_list")
    }
    assert safe["bash"] is None and safe["job_kill"] is None
    assert safe["job_output"] is not None and safe["job_output"]({"job_id": "job-1"}) is True
    assert safe["job_list"] is not None and safe["job_list"]({}) is True


async def test_terminal_cards_for_the_call_and_the_result(runtime: ToolRuntime) -> None:
    """BA8: a terminal call card (command, description, cwd) and a terminal result card with the exit."""
    definition = runtime.get("bash")
    assert definition is not None and definition.present_call is not None
    call_card = definition.present_call(
        {"command": "make test", "description": "run the tests", "cwd": "src"}
    )
    assert call_card == {
        "card": "terminal",
        "title": "make test",
        "description": "run the tests",
        "cwd": "src",
    }
    assert definition.present_call({"command": "npm start", "background": True}) == {
        "card": "generic",
        "title": "background job: npm start",
        "kind": "execute",
    }
    result = await runtime.call("bash", {"command": "echo out; exit 4"})
    assert result.meta["exitCode"] == 4 and result.meta["isolation"] is None
    assert definition.present_result is not None
    card = definition.present_result(
        {"command": "echo out; exit 4"}, {"content": result.content, "is_error": False, "meta": result.meta}
    )
    # The status line is the model's; the card carries the exit code once, in its own field.
    assert card == {"card": "terminal", "title": "bash", "output": "out", "exitCode": 4}
    # On replay without meta the exit is parsed from the status line.
    replayed = definition.present_result({"command": "x"}, {"content": result.content, "is_error": False})
    assert replayed is not None and replayed.get("exitCode") == 4
    killed = await runtime.call("bash", {"command": "kill -TERM $$"})
    assert definition.present_result(
        {"command": "kill -TERM $$"}, {"content": killed.content, "is_error": False}
    ) == {
        "card": "terminal",
        "title": "bash",
        "output": "(no output)",
        "signal": "SIGTERM",
    }


async def test_a_command_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    """BA6: a missing workspace fails at construction; sandbox=False never needs the sandbox."""
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        BashTools(tmp_path / "missing", sandbox=False)
    with pytest.raises(ValueError, match="timeout_ms"):
        BashTools(tmp_path, sandbox=False, timeout_ms=0)
    assert BashTools(tmp_path, sandbox=False).isolation is None
