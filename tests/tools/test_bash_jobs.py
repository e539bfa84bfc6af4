"""Background jobs: start, read what is new, kill, list, and nothing outliving the runtime.

Real process trees; a process left behind is found by a unique marker in its command line.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bash_helpers import marker, survivors, until_running
from toolrt import ToolRuntime
from toolrt.tools import BashTools, install_bash


def code_of(result: Any) -> str | None:
    return None if not result.is_error or result.error.info is None else result.error.info.code


async def test_a_job_runs_in_the_background_and_is_read_incrementally(tmp_path: Path) -> None:
    """BA9: bash(background=true) returns a job id at once; job_output returns only what is new."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False)
    started = await runtime.call(
        "bash", {"command": "echo one; read -t 0.4 < /dev/zero; echo two", "background": True}
    )
    assert started.value == {"kind": "background", "jobId": "job-1", "cwd": "."}
    assert "Started background job job-1" in started.content[0]["text"]
    first = await runtime.call("job_output", {"job_id": "job-1", "wait_ms": 5_000})
    assert first.value["output"] == "one\n"
    assert first.value["status"] == "running"
    deadline = time.monotonic() + 10
    seen = first.value["output"]
    while True:
        later = await runtime.call("job_output", {"job_id": "job-1", "wait_ms": 1_000})
        seen += later.value["output"]
        if later.value["status"] != "running" or time.monotonic() > deadline:
            break
    assert seen == "one\ntwo\n"
    assert (later.value["status"], later.value["exitCode"], later.value["signal"]) == ("exited", 0, None)
    assert later.content[0]["text"].endswith("[job job-1: exited with code 0]")
    again = await runtime.call("job_output", {"job_id": "job-1"})
    assert again.value["output"] == ""
    listing = await runtime.call("job_list", {})
    assert [(job["jobId"], job["status"], job["exitCode"]) for job in listing.value["jobs"]] == [
        ("job-1", "exited", 0)
    ]
    runtime.close()


async def test_job_kill_kills_the_whole_group(tmp_path: Path) -> None:
    """BA9: job_kill sends the group SIGTERM, then SIGKILL; a SIGTERM-ignoring child dies too."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False)
    mark = marker()
    await runtime.call(
        "bash", {"command": f"(trap '' TERM; exec sleep {mark}) & sleep {mark}1", "background": True}
    )
    await until_running(mark)
    killed = await runtime.call("job_kill", {"job_id": "job-1"})
    assert killed.value["status"] == "killed"
    assert killed.value["signal"] == "SIGTERM"
    assert survivors(mark) == []
    output = await runtime.call("job_output", {"job_id": "job-1"})
    assert output.value["status"] == "killed"
    runtime.close()


async def test_a_fast_job_drops_its_oldest_unread_output_and_counts_it(tmp_path: Path) -> None:
    """BA10: a job's unread output is bounded; what was dropped is counted, once, in droppedBytes."""
    runtime = ToolRuntime()
    bash = BashTools(tmp_path, sandbox=False, max_output_chars=1_000, job_buffer_bytes=4_096)
    for definition in bash.definitions():
        runtime.register(definition)
    await runtime.call("bash", {"command": "seq 1 20000; echo END", "background": True})
    snapshot: dict[str, Any] = {}
    for _ in range(200):
        snapshot = (await runtime.call("job_list", {})).value["jobs"][0]
        if snapshot["status"] != "running":
            break
        await asyncio.sleep(0.02)
    total = sum(len(f"{n}\n") for n in range(1, 20_001)) + len("END\n")
    assert snapshot["totalBytes"] == total
    first = await runtime.call("job_output", {"job_id": "job-1"})
    assert first.value["droppedBytes"] == total - 4_096
    assert len(first.value["output"]) == 1_000 and first.value["more"] is True
    assert "bytes of older output were dropped unread" in first.content[0]["text"]
    rest = ""
    while True:
        page = await runtime.call("job_output", {"job_id": "job-1"})
        assert page.value["droppedBytes"] == 0
        rest += page.value["output"]
        if not page.value["more"]:
            break
    assert (first.value["output"] + rest).endswith("19999\n20000\nEND\n")
    assert len(first.value["output"] + rest) == 4_096
    runtime.close()


async def test_closing_the_runtime_kills_every_job(tmp_path: Path) -> None:
    """BA11: runtime.close() (the on_close hook install_bash adds) leaves no job's process alive."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False)
    marks = [marker(), marker()]
    await runtime.call("bash", {"command": f"sleep {marks[0]}", "background": True})
    await runtime.call(
        "bash", {"command": f"(trap '' TERM; exec sleep {marks[1]}) & wait", "background": True}
    )
    for mark in marks:
        await until_running(mark)
    runtime.close()
    assert [survivors(mark) for mark in marks] == [[], []]
    await asyncio.sleep(0.1)  # let the watchers see their jobs end


async def test_aclose_kills_every_job_and_refuses_new_ones(tmp_path: Path) -> None:
    """BA11: BashTools.aclose() kills the jobs gracefully; a later start is JOBS_CLOSED."""
    runtime = ToolRuntime()
    bash = install_bash(runtime, tmp_path, sandbox=False)
    mark = marker()
    await runtime.call("bash", {"command": f"sleep {mark}", "background": True})
    await until_running(mark)
    await bash.aclose()
    assert survivors(mark) == []
    listing = await runtime.call("job_list", {})
    assert listing.value["jobs"][0]["status"] == "killed"
    refused = await runtime.call("bash", {"command": "true", "background": True})
    assert code_of(refused) == "JOBS_CLOSED"
    runtime.close()


async def test_on_close_hooks_run_once_and_can_be_unhooked() -> None:
    """BA11: ToolRuntime.on_close runs its callback at close, once; the disposer unhooks it."""
    runtime = ToolRuntime()
    calls: list[str] = []
    runtime.on_close(lambda: calls.append("kept"))
    unhook = runtime.on_close(lambda: calls.append("unhooked"))
    unhook()
    runtime.close()
    runtime.close()
    assert calls == ["kept"]


async def test_unknown_jobs_and_bad_reads_are_structured_errors(tmp_path: Path) -> None:
    """BA9: an unknown job id names the known ones; a negative wait is INVALID_ARGS."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False)
    missing = await runtime.call("job_output", {"job_id": "job-9"})
    assert code_of(missing) == "UNKNOWN_JOB"
    assert "no background job 'job-9'; known jobs: none" in missing.content[0]["text"]
    assert code_of(await runtime.call("job_kill", {"job_id": "nope"})) == "UNKNOWN_JOB"
    assert code_of(await runtime.call("job_output", {"job_id": "job-1", "wait_ms": -1})) == "INVALID_ARGS"
    runtime.close()


async def test_too_many_running_jobs_are_refused(tmp_path: Path) -> None:
    """BA10: at most MAX_RUNNING_JOBS run at once; the next start says how to make room."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False, max_jobs=2)
    mark = marker()
    for _ in range(2):
        assert not (await runtime.call("bash", {"command": f"sleep {mark}", "background": True})).is_error
    refused = await runtime.call("bash", {"command": f"sleep {mark}", "background": True})
    assert code_of(refused) == "TOO_MANY_JOBS"
    await runtime.call("job_kill", {"job_id": "job-1"})
    assert not (await runtime.call("bash", {"command": "true", "background": True})).is_error
    runtime.close()
    assert survivors(mark) == []


async def test_a_character_split_between_two_reads_is_decoded_whole(tmp_path: Path) -> None:
    """BA5 / BA9: job output is decoded incrementally: a UTF-8 sequence cut by a read stays whole."""
    runtime = ToolRuntime()
    install_bash(runtime, tmp_path, sandbox=False)
    await runtime.call(
        "bash", {"command": r"printf 'a\xe2\x82'; sleep 0.3; printf '\xac\xffz'", "background": True}
    )
    first = await runtime.call("job_output", {"job_id": "job-1", "wait_ms": 5_000})
    assert first.value["output"] == "a"  # the two bytes of the euro sign wait for the third
    seen = first.value["output"]
    for _ in range(100):
        page = await runtime.call("job_output", {"job_id": "job-1", "wait_ms": 1_000})
        seen += page.value["output"]
        if page.value["status"] != "running":
            break
    assert seen == "a\u20ac\ufffdz"
    runtime.close()
