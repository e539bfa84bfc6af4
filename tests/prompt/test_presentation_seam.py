"""The seams the core offers the code presentation: the runtime's ``run_code`` transport
(``use_code_presentation``) and the prompt of ``code``/``both`` scopes (``use_presentation_prompt``).
Code Mode plugs into both from ``toolrt/__init__.py``; the core never imports it."""

from __future__ import annotations

import ast
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

import pytest

from code_mode_fakes import FakeRuntime
from helpers import echo_tool
from toolrt import ToolRuntime
from toolrt._prompt import (
    PresentationSection,
    PromptContext,
    SystemPrompt,
    ToolContribution,
    connect_runtime,
    presentation_prompt,
    runtime_chain,
    use_presentation_prompt,
)
from toolrt._registry import PresentationMode
from toolrt._tool_runtime import use_code_presentation
from toolrt.codemode._prompt_sections import CODE_MODE_PROMPT
from toolrt.codemode._transport import CODE_MODE_TRANSPORT

SRC = Path(__file__).resolve().parents[2] / "src" / "toolrt"
CORE = [
    SRC / "_tool_runtime.py",
    SRC / "_registry.py",
    SRC / "_pipeline.py",
    *sorted((SRC / "_prompt").glob("*.py")),
]


def imported_modules(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


@pytest.mark.parametrize("path", CORE, ids=lambda path: path.name)
def test_the_core_never_imports_code_mode(path: Path) -> None:
    """Not at module level, not lazily, not under TYPE_CHECKING."""
    assert [name for name in imported_modules(path) if name.startswith("toolrt.codemode")] == []


def test_importing_toolrt_plugs_code_mode_into_both_seams() -> None:
    assert presentation_prompt() is CODE_MODE_PROMPT
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    definition = runtime.get("run_code")
    assert definition is not None
    # No code runtime configured: the TypeScript flavour.
    assert "Execute a TypeScript program" in definition.description


@pytest.fixture
def unplugged() -> Iterator[None]:
    use_code_presentation(None)
    use_presentation_prompt(None)
    try:
        yield
    finally:
        use_code_presentation(CODE_MODE_TRANSPORT)
        use_presentation_prompt(CODE_MODE_PROMPT)


@pytest.mark.usefixtures("unplugged")
async def test_without_a_code_presentation_code_scopes_see_no_run_code_but_the_name_stays_reserved() -> None:
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    runtime.register(echo_tool())
    assert runtime.get("run_code") is None
    assert [schema["name"] for schema in runtime.schemas()] == ["echo"]
    with pytest.raises(ValueError, match="reserved for the Code Mode presentation transport"):
        runtime.reserve("run_code")

    prompt = SystemPrompt()
    connect_runtime(prompt, runtime)
    with pytest.raises(RuntimeError, match='mode "code" has no presentation plugged into the system prompt'):
        await prompt.assemble()


class Banner:
    """A presentation prompt of its own: one tool list and one section, both per scope."""

    def __init__(self) -> None:
        self.asked: list[tuple[Hashable | None, PresentationMode]] = []

    def tools(self, runtime: ToolRuntime, scope: Hashable | None, mode: PresentationMode) -> ToolContribution:
        self.asked.append((scope, mode))
        return ToolContribution(runtime.schemas(scope), known_names=runtime.known_tool_names(scope))

    def sections(self, runtime: ToolRuntime) -> Sequence[PresentationSection]:
        def text(context: PromptContext) -> str:
            return f"presented as {runtime.mode_for(context.scope)}"

        return (PresentationSection("banner", 5, text),)


@pytest.mark.usefixtures("unplugged")
async def test_a_registered_presentation_prompt_supplies_the_tools_and_sections_of_non_native_scopes() -> (
    None
):
    banner = Banner()
    use_presentation_prompt(banner)
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.register(echo_tool())
    early = runtime.scope("early")
    early.present_as("both")
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    dispose = connect_runtime(prompt, runtime)
    runtime.scope("late").present_as("code")

    native = await prompt.assemble()
    assert [section.name for section in native.sections] == []
    assert native.tool_names == ("echo",)
    assert (await prompt.assemble("early")).render() == "presented as both"
    assert (await prompt.assemble("late")).render() == "presented as code"
    assert banner.asked == [("early", "both"), ("late", "code")]

    dispose()
    assert (await prompt.assemble("early")).sections == ()
