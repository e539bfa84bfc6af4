"""Every model-facing message is capped in length, and a cut one says so (issue 12 item 5).

Reported: a 50 MB path argument came back as a 52-million-character error, and a very deep
expression echoed a 65 KB source line. One function cuts (``toolrt._errors.clip_text``); these tests
feed it what users and models send: a 50 MB argument echoed by an error, a huge unknown tool name,
ten thousand unexpected keys, a 65 KB source line in a syntax error in the real sandbox.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from toolrt import ToolrtError, ToolRuntime, tool
from toolrt._content import content_text
from toolrt._errors import MAX_ECHO_CHARS, MAX_LINE_CHARS, MAX_MESSAGE_CHARS, clip_text
from toolrt.sandbox import PythonSandboxRuntime

MARKER = re.compile(r"\[… ([\d,]+) characters cut\]")


def cut_count(text: str) -> int:
    return sum(int(match.group(1).replace(",", "")) for match in MARKER.finditer(text))


# --- the one capping function ---------------------------------------------------------------------


def test_text_within_the_limit_is_returned_as_it_is() -> None:
    assert clip_text("", 10) == ""
    assert clip_text("x" * 40, 40) == "x" * 40


@pytest.mark.parametrize(
    ("length", "limit"),
    [
        (length, limit)
        for length in (41, 100, 10_000, 1_000_000, 52_000_000)
        for limit in (40, 200, 4_000)
        if length > limit  # every case is a cut
    ],
)
def test_a_cut_text_is_exactly_the_limit_long_and_counts_what_it_cut(length: int, limit: int) -> None:
    text = "h" + "m" * (length - 2) + "t"
    clipped = clip_text(text, limit)
    assert len(clipped) == limit
    (marker,) = MARKER.findall(clipped)
    assert len(clipped) - len(f"[… {marker} characters cut]") + cut_count(clipped) == length
    assert clipped.startswith("h") and clipped.endswith("t")  # head and tail kept


def test_line_limit_cuts_each_long_line_so_the_last_line_survives() -> None:
    traceback = (
        'File "<run_code>", line 1\n    x = ' + "(" * 65_000 + "\nSyntaxError: too many nested parentheses"
    )
    clipped = clip_text(traceback, MAX_MESSAGE_CHARS, line_limit=MAX_LINE_CHARS)
    lines = clipped.split("\n")
    assert len(lines) == 3 and all(len(line) <= MAX_LINE_CHARS for line in lines)
    assert lines[-1] == "SyntaxError: too many nested parentheses"
    kept = len(clipped) - sum(len(match.group(0)) for match in MARKER.finditer(clipped))
    assert cut_count(clipped) == len(traceback) - kept


# --- what the model reads -------------------------------------------------------------------------


@tool
async def open_path(path: str) -> str:
    """Fail, echoing the path (as many real tools' errors do)."""
    raise ToolrtError(f"cannot open {path}: no such file or directory", "ENOENT")


@tool
async def strict(a: int) -> int:
    """A tool with a closed parameter object."""
    return a


@pytest.fixture
def native() -> ToolRuntime:
    runtime = ToolRuntime()
    runtime.register(open_path)
    runtime.register(strict)
    return runtime


async def test_a_50_mb_argument_echoed_by_an_error_comes_back_cut(native: ToolRuntime) -> None:
    path = "/data/" + "p" * 50 * 1024 * 1024
    result = await native.call("open_path", {"path": path})
    assert result.is_error
    text = content_text(result.content)
    assert len(text) == len("Error: ") + MAX_MESSAGE_CHARS
    assert text.startswith("Error: cannot open /data/ppp") and text.endswith("ppp: no such file or directory")
    marker = MARKER.search(text)
    assert marker is not None
    full = f"cannot open {path}: no such file or directory"
    assert cut_count(text) == len(full) - (MAX_MESSAGE_CHARS - len(marker.group(0)))  # the count is true
    assert result.error.message == text.removeprefix("Error: ")  # type: ignore[union-attr]
    assert result.error.info is not None and result.error.info.code == "ENOENT"  # type: ignore[union-attr]


async def test_a_huge_unknown_tool_name_is_echoed_cut(native: ToolRuntime) -> None:
    name = "send_email" + "x" * 10_000_000
    result = await native.call(name, {})
    assert result.is_error
    text = content_text(result.content)
    assert text.startswith('Error: unknown tool "send_email') and text.endswith('x"')
    assert len(text) == len('Error: unknown tool ""') + MAX_ECHO_CHARS
    assert "characters cut]" in text
    assert result.error.info is not None and result.error.info.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]


async def test_ten_thousand_violations_are_one_capped_message(native: ToolRuntime) -> None:
    arguments = {"a": 1, **{f"extra_{index}": index for index in range(10_000)}}
    result = await native.call("strict", arguments)
    assert result.is_error
    text = content_text(result.content)
    assert text.startswith('Error: invalid arguments: "extra_0" is not a declared property')
    assert len(text) == len("Error: ") + MAX_MESSAGE_CHARS and "characters cut]" in text
    assert result.error.info is not None and result.error.info.code == "INVALID_ARGS"  # type: ignore[union-attr]


async def test_a_short_message_is_untouched(native: ToolRuntime) -> None:
    result = await native.call("strict", {"a": "one"})
    assert content_text(result.content) == 'Error: invalid arguments: "a" must be an integer'


# --- Code Mode, in the real sandbox ---------------------------------------------------------------


@pytest.fixture
async def code_mode() -> AsyncIterator[ToolRuntime]:
    sandbox = PythonSandboxRuntime(pool_size=0)
    yield ToolRuntime(mode="code", code_runtime=sandbox)
    await sandbox.aclose()


async def test_a_65_kb_source_line_in_a_syntax_error_is_cut_and_the_error_survives(
    code_mode: ToolRuntime,
) -> None:
    program = "x = " + "(" * 65_000 + "1" + ")" * 65_000 + "\n"
    result = await code_mode.call("run_code", {"code": program, "description": "deep"})
    assert result.is_error
    text = content_text(result.content)
    assert text.startswith("Error: code run failed (exception):")
    assert len(text) <= len("Error: code run failed (exception): ") + MAX_MESSAGE_CHARS
    assert "characters cut]" in text
    assert text.rstrip().endswith("SyntaxError: too many nested parentheses")


async def test_a_failed_program_s_captured_output_is_not_cut_by_the_message_cap(
    code_mode: ToolRuntime,
) -> None:
    """The output budget bounds captured output (and spills it); the message cap is for the error."""
    program = "print('o' * 12_000)\nraise ValueError('e' * 100_000)\n"
    result = await code_mode.call("run_code", {"code": program, "description": "loud"})
    assert result.is_error
    text = content_text(result.content)
    assert text.endswith("\nCaptured output:\n" + "o" * 12_000)
    message = text[: text.index("\nCaptured output:\n")]
    assert len(message) <= len("Error: code run failed (exception): ") + MAX_MESSAGE_CHARS
    assert "characters cut]" in message and "ValueError: eee" in message
