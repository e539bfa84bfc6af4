"""The default output budget: every model-facing result is bounded unless someone says otherwise.

Issue 12 item 1: past the budget the model reads a head-and-tail preview and a ``read_spill``
locator; the full content is kept losslessly and can be read back, bounded, through ``read_spill``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from toolrt import (
    DEFAULT_OUTPUT_BUDGET,
    UNBOUNDED,
    Accept,
    ToolDefinition,
    ToolOutput,
    ToolRuntime,
    define_tool,
    tool,
)
from toolrt.policies import SPILL_READER_NAME, SpillStore, install_spill_policy

LOCATOR = re.compile(r"spill://[A-Za-z0-9_-]+")


def text_of(size: int) -> str:
    # Varied text, with line breaks of both kinds, so a lossy read-back cannot pass by accident.
    return "".join("abcdefghij\r\n"[index % 12] if index % 97 else "é" for index in range(size))


def dump_tool(size: int, *, name: str = "dump", **options: Any) -> ToolDefinition:
    payload = text_of(size)
    return define_tool(
        name=name,
        description="Dump a lot of text.",
        parameters={},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: payload,
        **options,
    )


def model_text(result: Any) -> str:
    return "".join(block["text"] for block in result.content)


async def read_back(runtime: ToolRuntime, locator: str, offset: int) -> str:
    pages = []
    while True:
        page = await runtime.call(SPILL_READER_NAME, {"locator": locator, "offset": offset})
        assert not page.is_error, model_text(page)
        chunk = model_text(page)
        if not chunk:
            return "".join(pages)
        assert len(chunk) <= DEFAULT_OUTPUT_BUDGET
        pages.append(chunk)
        offset += len(chunk)


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0, -1, 1.5, True, None, "20000"])
def test_a_runtime_budget_must_be_a_positive_int_or_unbounded(budget: Any) -> None:
    with pytest.raises(ValueError, match="output_budget must be a positive int or UNBOUNDED"):
        ToolRuntime(output_budget=budget)


@pytest.mark.parametrize("budget", [0, -5, 2.5, False, "big"])
def test_a_tool_budget_must_be_a_positive_int_or_unbounded(budget: Any) -> None:
    with pytest.raises(TypeError, match="max_output_chars must be a positive int or UNBOUNDED"):
        dump_tool(10, max_output_chars=budget)
    with pytest.raises(TypeError, match="max_output_chars must be a positive int or UNBOUNDED"):

        @tool(max_output_chars=budget)
        def shout(text: str) -> str:
            """Shout."""
            return text

    with pytest.raises(TypeError, match="max_output_chars must be a positive int or UNBOUNDED"):
        ToolDefinition(
            name="raw",
            description="A raw definition.",
            parameters={"type": "object"},
            output=ToolOutput(schema={"type": "string"}),
            execute=lambda args, ctx: "",
            max_output_chars=budget,
        )


async def test_read_spill_never_returns_more_than_its_page_whatever_limit_is_asked() -> None:
    runtime = ToolRuntime(output_budget=1_000)
    runtime.register(dump_tool(50_000))
    locator = LOCATOR.findall(model_text(await runtime.call("dump")))[0]
    page = await runtime.call(SPILL_READER_NAME, {"locator": locator, "offset": -7, "limit": 10_000_000})
    assert model_text(page) == text_of(50_000)[:1_000]
    runtime.close()


async def test_read_spill_refuses_a_locator_that_is_not_one() -> None:
    runtime = ToolRuntime(output_budget=100)
    runtime.register(dump_tool(1_000))
    await runtime.call("dump")
    bad = await runtime.call(SPILL_READER_NAME, {"locator": "spill://../../etc/passwd"})
    assert bad.is_error and "not a spill locator" in model_text(bad)
    runtime.close()


# --- the default ----------------------------------------------------------------------------------


async def test_a_five_million_character_result_reaches_the_model_bounded_and_reads_back_whole() -> None:
    runtime = ToolRuntime()
    assert runtime.output_budget == DEFAULT_OUTPUT_BUDGET == 20_000
    runtime.register(dump_tool(5_000_000))
    assert SPILL_READER_NAME not in [schema["name"] for schema in runtime.schemas()]
    result = await runtime.call("dump", call_id="c1")
    full = text_of(5_000_000)
    assert result.value == full  # the canonical value is untouched
    seen = model_text(result)
    assert len(seen) <= DEFAULT_OUTPUT_BUDGET
    assert seen.startswith(full[:8_000]) and f"\n{full[-2_000:]}\n" in seen
    assert "[… 4,990,000 characters omitted …]" in seen
    (locator,) = set(LOCATOR.findall(seen))
    assert seen.endswith(
        "[output truncated: 5,000,000 characters in total, over the budget of 20,000; "
        f"shown: the first 8,000 and the last 2,000. The full output is saved as {locator}. "
        f'Read the rest with read_spill({{"locator": "{locator}", "offset": 8000}}).]'
    )
    # read_spill appears once there is something to read, and gives back every character.
    assert SPILL_READER_NAME in [schema["name"] for schema in runtime.schemas()]
    assert full[:8_000] + await read_back(runtime, locator, 8_000) == full
    runtime.close()


async def test_results_within_the_budget_are_untouched_and_nothing_is_stored() -> None:
    runtime = ToolRuntime()
    runtime.register(dump_tool(DEFAULT_OUTPUT_BUDGET))
    result = await runtime.call("dump")
    assert model_text(result) == text_of(DEFAULT_OUTPUT_BUDGET)
    assert SPILL_READER_NAME not in runtime.known_tool_names()


async def test_close_removes_the_spilled_files() -> None:
    runtime = ToolRuntime(output_budget=100)
    runtime.register(dump_tool(1_000))
    locator = LOCATOR.findall(model_text(await runtime.call("dump")))[0]
    reader = runtime.get(SPILL_READER_NAME)
    assert reader is not None
    spill_files = [path for path in Path("/tmp").glob("toolrt-spill-*/*") if locator[8:] in path.name]
    assert spill_files and all(path.exists() for path in spill_files)
    runtime.close()
    assert not any(path.exists() for path in spill_files)
    assert not spill_files[0].parent.exists()


# --- overrides ------------------------------------------------------------------------------------


async def test_a_runtime_budget_applies_to_every_tool() -> None:
    runtime = ToolRuntime(output_budget=1_000)
    runtime.register(dump_tool(5_000))
    seen = model_text(await runtime.call("dump"))
    assert len(seen) <= 1_000 and "over the budget of 1,000; shown: the first 400 and the last 100." in seen
    runtime.close()


async def test_a_tool_budget_wins_over_the_runtime_budget_both_ways() -> None:
    runtime = ToolRuntime()
    runtime.register(dump_tool(5_000, name="small", max_output_chars=500))
    runtime.register(dump_tool(50_000, name="whole", max_output_chars=UNBOUNDED))
    runtime.register(dump_tool(30_000, name="large", max_output_chars=40_000))
    assert "over the budget of 500;" in model_text(await runtime.call("small"))
    assert model_text(await runtime.call("whole")) == text_of(50_000)
    assert model_text(await runtime.call("large")) == text_of(30_000)
    runtime.close()


async def test_the_decorator_carries_the_tool_budget() -> None:
    @tool(max_output_chars=50)
    def echo(text: str) -> str:
        """Echo a text."""
        return text

    assert echo.max_output_chars == 50
    runtime = ToolRuntime()
    runtime.register(echo)
    result = await runtime.call("echo", {"text": "x" * 60})
    assert result.value == "x" * 60 and "over the budget of 50;" in model_text(result)
    runtime.close()


async def test_unbounded_lets_a_huge_result_through_whole_and_registers_no_reader() -> None:
    runtime = ToolRuntime(output_budget=UNBOUNDED)
    runtime.register(dump_tool(5_000_000))
    assert model_text(await runtime.call("dump")) == text_of(5_000_000)
    assert SPILL_READER_NAME not in runtime.known_tool_names()


async def test_a_tool_budget_still_applies_under_an_unbounded_runtime() -> None:
    runtime = ToolRuntime(output_budget=UNBOUNDED)
    runtime.register(dump_tool(5_000, max_output_chars=1_000))
    assert "over the budget of 1,000;" in model_text(await runtime.call("dump"))
    runtime.close()


async def test_an_explicit_spill_policy_takes_over_from_the_default(tmp_path: Path) -> None:
    runtime = ToolRuntime()
    runtime.register(dump_tool(30_000))
    with install_spill_policy(runtime, SpillStore(tmp_path), max_chars=40_000):
        # Over the default budget, under the explicit one: the user's threshold decides.
        assert model_text(await runtime.call("dump")) == text_of(30_000)
    assert "over the budget of 20,000;" in model_text(await runtime.call("dump"))
    runtime.close()


async def test_an_explicit_spill_policy_on_a_scope_takes_over_for_that_agent_only(tmp_path: Path) -> None:
    runtime = ToolRuntime()
    runtime.register(dump_tool(30_000))
    scope = runtime.scope("agent-a")
    install_spill_policy(scope, SpillStore(tmp_path), max_chars=40_000)
    assert model_text(await runtime.call("dump", agent="agent-a")) == text_of(30_000)
    assert "over the budget of 20,000;" in model_text(await runtime.call("dump", agent="agent-b"))
    runtime.close()


# --- run_code ------------------------------------------------------------------------------------


async def test_run_code_output_is_bounded_and_bindings_still_get_the_whole_value() -> None:
    from toolrt.sandbox import PythonSandboxRuntime

    code_runtime = PythonSandboxRuntime(pool_size=0)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    runtime.register(dump_tool(100_000, max_output_chars=1_000))
    try:
        printed = await runtime.call("run_code", {"code": "print('x' * 5_000_000)", "description": "Flood"})
        seen = model_text(printed)
        assert not printed.is_error, seen
        assert len(seen) <= DEFAULT_OUTPUT_BUDGET and seen.startswith("x" * 8_000)
        assert "[output truncated: 5,000,000 characters in total, over the budget of 20,000;" in seen
        # A sub-call's budget bounds only what the model would read: the program gets the value.
        counted = await runtime.call(
            "run_code", {"code": "v = await tools.dump({})\nprint(len(v))", "description": "Count"}
        )
        assert model_text(counted).strip() == "100000"
    finally:
        runtime.close()
        await code_runtime.aclose()


async def test_content_replaced_by_a_bare_string_is_measured_too() -> None:
    runtime = ToolRuntime(output_budget=100)
    runtime.register(dump_tool(10))
    with runtime.on("tools/post-execute", lambda call, result, next: Accept(content="y" * 50)):
        assert model_text(await runtime.call("dump")) == "y" * 50
    runtime.on("tools/post-execute", lambda call, result, next: Accept(content="z" * 500))
    assert "over the budget of 100;" in model_text(await runtime.call("dump"))
    runtime.close()
