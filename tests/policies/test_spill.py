"""The spill policy: oversized results become a preview plus a locator; nothing is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolrt import Accept, ToolRuntime, define_tool
from toolrt.policies._spill import SpillStore, install_spill_policy, spill_reader_tool


def big_tool(size: int) -> Any:
    return define_tool(
        name="dump",
        description="Dump a lot of text.",
        parameters={},
        output={"schema": {"type": "string"}},
        execute=lambda args, ctx: "".join(chr(ord("a") + index % 26) for index in range(size)),
    )


async def test_small_results_pass_through_untouched(tmp_path: Path) -> None:
    runtime = ToolRuntime()
    runtime.register(big_tool(100))
    install_spill_policy(runtime, SpillStore(tmp_path), max_chars=1_000, preview_chars=100)
    result = await runtime.call("dump")
    assert len(result.content[0]["text"]) == 100
    assert list(tmp_path.iterdir()) == []


async def test_oversized_content_is_spilled_with_a_preview_and_the_value_kept(tmp_path: Path) -> None:
    runtime = ToolRuntime()
    runtime.register(big_tool(50_000))
    store = SpillStore(tmp_path)
    install_spill_policy(runtime, store, max_chars=10_000, preview_chars=500)
    result = await runtime.call("dump", call_id="c1")
    text = result.content[0]["text"]
    assert text.startswith("abcdefghij") and len(text) < 1_000
    assert "[output truncated: 50,000 characters in total. The full output is saved as spill://c1-" in text
    assert '"offset": 500' in text
    assert len(result.value) == 50_000  # the canonical value is untouched
    locator = text.split("saved as ")[1].split(". Read")[0]
    assert store.read(locator, 0, 50_000) == result.value  # nothing lost
    assert store.full_content(locator) == [{"type": "text", "text": result.value}]


async def test_the_model_can_page_through_a_spill_with_the_reader_tool(tmp_path: Path) -> None:
    runtime = ToolRuntime()
    runtime.register(big_tool(30_000))
    store = SpillStore(tmp_path)
    runtime.register(spill_reader_tool(store))
    install_spill_policy(runtime, store, max_chars=10_000, preview_chars=100)
    spilled = await runtime.call("dump")
    locator = spilled.content[0]["text"].split("saved as ")[1].split(". Read")[0]
    page = await runtime.call("read_spill", {"locator": locator, "offset": 100, "limit": 50})
    assert page.value == spilled.value[100:150]
    traversal = await runtime.call("read_spill", {"locator": "spill://../../etc/passwd"})
    assert traversal.is_error and "not a spill locator" in traversal.error.message  # type: ignore[union-attr]


async def test_spills_content_that_an_inner_post_execute_listener_replaced(tmp_path: Path) -> None:
    runtime = ToolRuntime()
    runtime.register(big_tool(10))
    install_spill_policy(runtime, SpillStore(tmp_path), max_chars=1_000, preview_chars=10)
    runtime.on(
        "tools/post-execute",
        lambda execution, result, next: Accept(content=[{"type": "text", "text": "x" * 5_000}]),
    )
    result = await runtime.call("dump")
    assert "5,000 characters in total" in result.content[0]["text"]
    assert result.value == "abcdefghij"
