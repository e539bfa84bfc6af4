"""``runtime.register_methods(obj)``: an object's public methods as tools, all or none, in one group.

What a user with a real back end does (BFCL's executable classes are the model): hand over an
instance, get one tool per public method, each built by ``@tool`` from the method's hints and
docstring, the class docstring as the group's description. Refusals come first: a method ``@tool``
cannot express, or a name already taken, registers nothing and names every method and why.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from toolrt import ToolDefinition, ToolOutput, ToolRuntime, tool
from toolrt._tool_definition import ToolGroup
from toolrt.lowlevel import ToolsChange


class GorillaFileSystem:
    """A BFCL-like file system: a tree of folders with a current working directory.

    Paths are relative to the current directory; folders are created on demand.
    """

    def __init__(self) -> None:
        self.cwd = "/"
        self.folders: dict[str, list[str]] = {"/": []}
        self.calls: list[str] = []

    def cd(self, folder: str) -> dict[str, str]:
        """Change the current working directory to the specified folder.

        Args:
            folder (str): The folder of the directory to change to.

        Returns:
            current_working_directory (str): The new current working directory path.
        """
        self.calls.append("cd")
        self.cwd = self.cwd.rstrip("/") + "/" + folder
        self.folders.setdefault(self.cwd, [])
        return {"current_working_directory": self.cwd}

    def mkdir(self, dir_name: str, parents: bool = False) -> dict[str, Any]:
        """Create a folder in the current directory.

        Args:
            dir_name (str): The name of the new folder.
            parents (bool): Whether to create missing parents.

        Returns:
            created (str): The path of the new folder.
        """
        self.folders[self.cwd].append(dir_name)
        return {"created": self.cwd.rstrip("/") + "/" + dir_name, "parents": parents}

    def ls(self, a: bool = False) -> dict[str, list[str]]:
        """List the current directory.

        Returns:
            current_directory_content (List[str]): The names in the current directory.
        """
        return {"current_directory_content": list(self.folders[self.cwd])}

    async def pwd(self) -> str:
        """The current working directory."""
        return self.cwd

    @staticmethod
    def separator() -> str:
        """The path separator."""
        return "/"

    @classmethod
    def kind(cls) -> str:
        """What this back end is."""
        return cls.__name__

    @property
    def depth(self) -> int:
        """A property is state, not an action: never a tool."""
        return self.cwd.count("/")

    class Entry:
        """A nested class is a type, not an action: never a tool."""

    def _resolve(self, path: str) -> str:
        return path


PUBLIC = ["cd", "mkdir", "ls", "pwd", "separator", "kind"]


# --- refusals first -------------------------------------------------------------------------------


class Unexpressible:
    """Two methods @tool refuses and one it accepts."""

    def fine(self, x: int) -> int:
        return x

    def variadic(self, *items: str) -> int:
        return len(items)

    def opaque(self, value: complex) -> int:
        return 0


def test_a_method_tool_cannot_express_refuses_the_whole_call_naming_each_method_and_why() -> None:
    runtime = ToolRuntime()
    with pytest.raises(TypeError) as caught:
        runtime.register_methods(Unexpressible())
    message = str(caught.value)
    assert message.startswith(
        "register_methods(Unexpressible): 2 methods cannot be tools, so none was registered:"
    )
    assert (
        '\n  variadic: @tool Unexpressible.variadic: parameter "items": *items cannot be expressed' in message
    )
    assert '\n  opaque: @tool Unexpressible.opaque: parameter "value"' in message
    assert "fine:" not in message
    assert runtime.get("fine") is None  # atomic: the expressible one is not registered either


def test_a_name_already_taken_refuses_the_whole_call_and_registers_nothing() -> None:
    runtime = ToolRuntime()

    @tool
    def ls() -> str:
        """Someone else's ls."""
        return ""

    runtime.register(ls)
    changes: list[ToolsChange] = []
    runtime.on("tools/change", changes.append)
    with pytest.raises(ValueError, match='tool "ls" is already registered'):
        runtime.register_methods(GorillaFileSystem())
    # Refused before anything was added: observers never saw cd and mkdir come and go.
    assert changes == []
    assert list(runtime.visible_tools()) == ["ls"]
    assert runtime.get("ls") is ls


def test_two_instances_sharing_method_names_need_a_prefix() -> None:
    runtime = ToolRuntime()
    runtime.register_methods(GorillaFileSystem())
    with pytest.raises(ValueError, match='tool "cd" is already registered'):
        runtime.register_methods(GorillaFileSystem())
    runtime.register_methods(GorillaFileSystem(), prefix="backup_")
    assert runtime.get("backup_cd") is not None
    assert len(runtime.visible_tools()) == 2 * len(PUBLIC)


def test_a_class_instead_of_an_instance_is_refused_with_the_fix() -> None:
    with pytest.raises(
        TypeError, match=r"takes an instance, got the class GorillaFileSystem .*GorillaFileSystem\(\.\.\.\)"
    ):
        ToolRuntime().register_methods(GorillaFileSystem)


def test_include_and_exclude_name_public_methods_only() -> None:
    runtime = ToolRuntime()
    with pytest.raises(
        ValueError, match=r"include names _resolve, rm, not public methods of GorillaFileSystem"
    ):
        runtime.register_methods(GorillaFileSystem(), include=["cd", "rm", "_resolve"])
    with pytest.raises(ValueError, match="exclude names depth, not public methods"):
        runtime.register_methods(GorillaFileSystem(), exclude=["depth"])
    with pytest.raises(TypeError, match="include must be a list of method names, not a string"):
        runtime.register_methods(GorillaFileSystem(), include="cd")
    with pytest.raises(ValueError, match="no public methods to register"):
        runtime.register_methods(GorillaFileSystem(), exclude=PUBLIC)
    assert runtime.visible_tools() == {}

    runtime.register_methods(GorillaFileSystem(), include=["cd", "ls"])
    assert list(runtime.visible_tools()) == ["cd", "ls"]
    other = ToolRuntime()
    other.register_methods(GorillaFileSystem(), exclude=["pwd", "kind", "separator"])
    assert list(other.visible_tools()) == ["cd", "mkdir", "ls"]


def test_bad_prefix_and_group_arguments_are_refused() -> None:
    runtime = ToolRuntime()
    with pytest.raises(TypeError, match="prefix must be a string, got int"):
        runtime.register_methods(GorillaFileSystem(), prefix=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="group must be a str or a ToolGroup, got int"):
        runtime.register_methods(GorillaFileSystem(), group=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a tool group name must be a non-empty string"):
        ToolGroup("  ")
    with pytest.raises(TypeError, match='tool "raw": group must be a ToolGroup, got str'):
        ToolDefinition(
            name="raw",
            description="",
            parameters={"type": "object", "properties": {}},
            output=ToolOutput(schema={"type": "string"}),
            execute=lambda args, ctx: "",
            group="fs",  # type: ignore[arg-type]
        )


def test_an_observer_failing_half_way_rolls_back_the_methods_already_added() -> None:
    runtime = ToolRuntime()
    seen: list[str | None] = []

    def observer(change: ToolsChange) -> None:
        seen.append(change.name)
        if change.name == "ls":
            raise RuntimeError("observer down")

    runtime.on("tools/change", observer)
    with pytest.raises(RuntimeError, match="observer down"):
        runtime.register_methods(GorillaFileSystem())
    assert runtime.visible_tools() == {}
    assert not runtime.has_tool_groups()
    assert seen[:3] == ["cd", "mkdir", "ls"]


# --- what gets registered -------------------------------------------------------------------------


def test_every_public_method_becomes_a_tool_and_nothing_else_does() -> None:
    runtime = ToolRuntime()
    runtime.register_methods(GorillaFileSystem())
    # Definition order, base classes first; no property, nested class, private method or dunder.
    assert list(runtime.visible_tools()) == PUBLIC


def test_methods_are_built_by_tool_from_their_hints_and_docstrings() -> None:
    runtime = ToolRuntime()
    runtime.register_methods(GorillaFileSystem())
    cd = runtime.get("cd")
    assert cd is not None
    assert cd.description == "Change the current working directory to the specified folder."
    assert cd.parameters == {
        "type": "object",
        "properties": {
            "folder": {"type": "string", "description": "The folder of the directory to change to."}
        },
        "required": ["folder"],
        "additionalProperties": False,
    }
    # The Returns: section reaches the output schema as its description.
    assert cd.output.schema == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "current_working_directory (str): The new current working directory path.",
    }
    mkdir = runtime.get("mkdir")
    assert mkdir is not None
    assert mkdir.parameters["required"] == ["dir_name"]
    assert mkdir.parameters["properties"]["parents"]["default"] is False
    pwd = runtime.get("pwd")
    assert pwd is not None and pwd.body_is_async
    assert runtime.get("cd") is not None and not runtime.get("cd").body_is_async  # type: ignore[union-attr]


def test_the_class_docstring_s_first_paragraph_is_the_group_every_method_carries() -> None:
    runtime = ToolRuntime()
    assert not runtime.has_tool_groups()
    runtime.register_methods(GorillaFileSystem())
    expected = ToolGroup(
        "GorillaFileSystem", "A BFCL-like file system: a tree of folders with a current working directory."
    )
    assert {definition.group for definition in runtime.visible_tools().values()} == {expected}
    assert runtime.has_tool_groups()
    # The group is said once, in the group: no tool description repeats it.
    assert all("BFCL" not in definition.description for definition in runtime.visible_tools().values())


def test_group_can_be_renamed_or_given_whole() -> None:
    runtime = ToolRuntime()
    runtime.register_methods(GorillaFileSystem(), group="files", include=["cd"])
    assert runtime.get("cd").group == ToolGroup(  # type: ignore[union-attr]
        "files", "A BFCL-like file system: a tree of folders with a current working directory."
    )
    explicit = ToolGroup("fs", "Files.")
    runtime.register_methods(GorillaFileSystem(), group=explicit, prefix="x_", include=["ls"])
    assert runtime.get("x_ls").group is explicit  # type: ignore[union-attr]


@dataclass
class Undocumented:
    size: int = 0

    def grow(self, by: int) -> int:
        self.size += by
        return self.size


class Child(GorillaFileSystem):
    def rm(self, name: str) -> bool:
        """Remove a folder."""
        return True


def test_an_undocumented_class_has_a_group_without_description_and_no_inherited_one() -> None:
    runtime = ToolRuntime()
    # @dataclass writes the signature into an undocumented class's __doc__: not a description.
    runtime.register_methods(Undocumented())
    assert runtime.get("grow").group == ToolGroup("Undocumented", "")  # type: ignore[union-attr]
    child = ToolRuntime()
    child.register_methods(Child())
    assert list(child.visible_tools()) == [*PUBLIC, "rm"]  # inherited methods count
    assert child.get("rm").group == ToolGroup("Child", "")  # type: ignore[union-attr]


async def test_calls_run_the_bound_methods_and_change_the_object_s_state() -> None:
    fs = GorillaFileSystem()
    runtime = ToolRuntime()
    runtime.register_methods(fs)
    result = await runtime.call("cd", {"folder": "docs"})
    assert result.value == {"current_working_directory": "/docs"}  # type: ignore[union-attr]
    assert fs.cwd == "/docs" and fs.calls == ["cd"]
    await runtime.call("mkdir", {"dir_name": "notes"})
    listing = await runtime.call("ls", {})
    assert listing.value == {"current_directory_content": ["notes"]}  # type: ignore[union-attr]
    assert (await runtime.call("pwd", {})).value == "/docs"  # type: ignore[union-attr]
    assert (await runtime.call("separator", {})).value == "/"  # type: ignore[union-attr]
    assert (await runtime.call("kind", {})).value == "GorillaFileSystem"  # type: ignore[union-attr]
    # A model mistake is a result the model reads, as for any @tool.
    bad = await runtime.call("cd", {"folder": 3})
    assert bad.content == [{"type": "text", "text": 'Error: invalid arguments: "folder" must be a string'}]
    assert fs.cwd == "/docs"


async def test_one_disposer_undoes_every_method_and_a_scope_keeps_them_to_itself() -> None:
    runtime = ToolRuntime()
    dispose = runtime.register_methods(GorillaFileSystem())
    dispose()
    assert runtime.visible_tools() == {}
    assert not runtime.has_tool_groups()
    runtime.register_methods(GorillaFileSystem())  # the names are free again

    other = ToolRuntime()
    with other.scope("agent") as scope:
        scope.register_methods(GorillaFileSystem(), include=["cd"])
        assert list(other.visible_tools("agent")) == ["cd"]
        assert list(other.visible_tools()) == []
    assert list(other.visible_tools("agent")) == []
    assert not other.has_tool_groups()
    await asyncio.sleep(0)


def test_tool_takes_a_group_too() -> None:
    @tool(group="maths")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    assert add.group == ToolGroup("maths")
    assert add.validate_arguments is not None and add.validate_arguments({"a": 1, "b": "x"})

    def noop() -> None:
        """Nothing."""

    with pytest.raises(TypeError, match="group must be a str or a ToolGroup, got int"):
        tool(group=3)(noop)  # type: ignore[call-overload]


async def test_a_code_mode_program_in_the_real_sandbox_drives_the_object_through_its_methods() -> None:
    """What the SDK promised (the keys of ``cd``'s result) is what the program reads back."""
    from toolrt.sandbox import PythonSandboxRuntime

    fs = GorillaFileSystem()
    code_runtime = PythonSandboxRuntime(pool_size=0)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    runtime.register_methods(fs, exclude=["kind", "separator"])
    program = (
        'moved = await tools.cd({"folder": "docs"})\n'
        'await tools.mkdir({"dir_name": "notes"})\n'
        "listing = await tools.ls({})\n"
        'return [moved["current_working_directory"], listing["current_directory_content"],\n'
        "        await tools.pwd({})]"
    )
    try:
        result = await runtime.call("run_code", {"code": program, "description": "Use the file system"})
        assert not result.is_error, result.content
        assert result.value["result"] == ["/docs", ["notes"], "/docs"]  # type: ignore[union-attr]
        assert fs.cwd == "/docs" and fs.folders["/docs"] == ["notes"]
        refused = await runtime.call(
            "run_code", {"code": 'await tools.cd({"folder": 1})', "description": "A mistake"}
        )
        assert refused.is_error
        assert '"folder" must be a string' in refused.content[0]["text"]  # type: ignore[index]
        assert fs.cwd == "/docs"
    finally:
        runtime.close()
        await code_runtime.aclose()
