"""The native prompt's ``tools:groups`` section: each group's description once, not per tool.

A model shown a file system's and a trading account's methods side by side reads which system each
tool belongs to here; the tool descriptions stay the tools' own. A prompt without groups assembles
exactly as before (no extra section, not even an empty one).
"""

from __future__ import annotations

from code_mode_fakes import FakeRuntime
from toolrt import ToolRuntime, tool
from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain
from toolrt._prompt.tool_groups import GROUPS_SECTION
from toolrt._tool_definition import ToolGroup


class GorillaFileSystem:
    """A file system with a current working directory."""

    def cd(self, folder: str) -> str:
        """Change the current directory."""
        return folder

    def ls(self) -> list[str]:
        """List the current directory."""
        return []


class TradingBot:
    """A brokerage account:
    orders, a watchlist and a balance.

    Second paragraph, not shown.
    """

    def place_order(self, symbol: str, amount: int) -> dict[str, int]:
        """Place an order."""
        return {"order_id": 1}


@tool
def echo(text: str) -> str:
    """Echo a text."""
    return text


def connected(runtime: ToolRuntime) -> SystemPrompt:
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    return prompt


EXPECTED = (
    "## Tool groups\n"
    "\n"
    "- GorillaFileSystem (cd, ls): A file system with a current working directory.\n"
    "- TradingBot (place_order): A brokerage account: orders, a watchlist and a balance."
)


async def test_each_group_is_described_once_and_the_tool_descriptions_stay_their_own() -> None:
    runtime = ToolRuntime()
    prompt = connected(runtime)
    runtime.register(echo)
    runtime.register_methods(TradingBot())
    runtime.register_methods(GorillaFileSystem())
    assembly = await prompt.assemble()
    section = assembly.section(GROUPS_SECTION)
    assert section is not None and section.text == EXPECTED
    assert assembly.render() == EXPECTED
    assert [(t["name"], t["description"]) for t in assembly.tools] == [
        ("cd", "Change the current directory."),
        ("echo", "Echo a text."),
        ("ls", "List the current directory."),
        ("place_order", "Place an order."),
    ]
    # Byte-identical on an unchanged tool set (prefix caches keep hitting).
    assert (await prompt.assemble()).render() == EXPECTED


async def test_a_prompt_without_groups_has_no_groups_section_at_all() -> None:
    runtime = ToolRuntime()
    prompt = connected(runtime)
    runtime.register(echo)
    assert (await prompt.assemble()).sections == ()


async def test_the_section_follows_what_each_scope_sees_and_groups_registered_before_connecting() -> None:
    runtime = ToolRuntime()
    runtime.register_methods(GorillaFileSystem())  # before the prompt is connected
    prompt = connected(runtime)
    with runtime.scope("trader") as scope:
        scope.register_methods(TradingBot())
        scoped = (await prompt.assemble("trader")).render()
        assert "- TradingBot (place_order)" in scoped and "- GorillaFileSystem (cd, ls)" in scoped
        assert "TradingBot" not in (await prompt.assemble()).render()
        scope.restrict(deny=["cd", "ls"])
        assert (await prompt.assemble("trader")).render() == (
            "## Tool groups\n\n"
            "- TradingBot (place_order): A brokerage account: orders, a watchlist and a balance."
        )


async def test_a_group_set_with_tool_or_a_tool_group_renders_like_register_methods() -> None:
    runtime = ToolRuntime()
    prompt = connected(runtime)

    @tool(group="maths")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool(group=ToolGroup("text", "String\n  helpers."))
    def upper(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    runtime.register(upper)
    runtime.register(add)
    assert (await prompt.assemble()).render() == (
        "## Tool groups\n\n- maths (add)\n- text (upper): String helpers."
    )


async def test_code_mode_scopes_read_their_groups_in_the_sdk_instead() -> None:
    runtime = ToolRuntime(code_runtime=FakeRuntime("python"))
    runtime.register_methods(GorillaFileSystem())
    prompt = connected(runtime)
    with runtime.scope("coder") as scope:
        scope.present_as("code")
        assembly = await prompt.assemble("coder")
        section = assembly.section(GROUPS_SECTION)
        assert section is not None and section.text == ""
        sdk = assembly.section("tools:sdk")
        assert sdk is not None
        assert sdk.text.count("A file system with a current working directory.") == 1
    native = (await prompt.assemble()).render()
    assert native.count("A file system with a current working directory.") == 1


async def test_a_deployment_s_own_groups_section_wins_and_disposal_removes_ours() -> None:
    runtime = ToolRuntime()
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    prompt.section(GROUPS_SECTION, 5, "our own text")
    dispose = connect_runtime(prompt, runtime)
    runtime.register_methods(GorillaFileSystem())  # must not fail because the name is taken
    assert (await prompt.assemble()).render() == "our own text"

    other = ToolRuntime()
    other_prompt = connected(other)
    undo = connect_runtime(SystemPrompt(), other)
    other.register_methods(GorillaFileSystem())
    assert (await other_prompt.assemble()).section(GROUPS_SECTION) is not None
    undo()
    dispose()
    other.close()
    assert (await other_prompt.assemble()).sections == ()
