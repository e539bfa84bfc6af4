"""The compact SDK: shared shapes declared once (contract TS3–TS6).

Users hit this with real tool sets: five tools returning the same ``User`` object, a status enum on
every order tool. The unshared renderers (upstream's texts, pinned in test_sdk_python.py and
test_sdk_typescript.py) stay as they are; ``share_types=True`` is what Code Mode's prompt sends.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from code_mode_fakes import setup
from toolrt import ToolDefinition, ToolOutput
from toolrt.codemode._prompt_sections import render_sdk
from toolrt.codemode._sdk_python import render_tools_sdk_py
from toolrt.codemode._sdk_tool import SdkTool
from toolrt.codemode._sdk_typescript import render_tools_sdk_ts

ADDRESS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
    "required": ["city", "zip"],
    "additionalProperties": False,
}
STATUS: dict[str, Any] = {"type": "string", "enum": ["active", "suspended", "deleted"]}
USER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The user's id."},
        "status": STATUS,
        "address": ADDRESS,
    },
    "required": ["id", "status", "address"],
    "additionalProperties": False,
}
USER_ID: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


def tools() -> list[SdkTool]:
    listing = {
        "type": "object",
        "properties": {"users": {"type": "array", "items": USER}, "next": {"type": "string"}},
        "required": ["users"],
        "additionalProperties": False,
    }
    by_status = {
        "type": "object",
        "properties": {"status": STATUS},
        "required": ["status"],
        "additionalProperties": False,
    }
    return [
        SdkTool("get_user", "Fetch one user.", USER_ID, USER),
        SdkTool("suspend_user", "Suspend a user.", USER_ID, USER),
        SdkTool("list_users", "List users with a status.", by_status, listing),
    ]


def block(text: str, fence: str) -> str:
    return text[text.index(fence) + len(fence) : text.rindex("\n```")]


def test_python_declares_a_repeated_object_once_and_refers_to_it_everywhere() -> None:
    """TS3: the ``User`` three tools return is one TypedDict; its nested ``Address`` too;
    identical argument shapes (``get_user``/``suspend_user``) share one class."""
    code = block(render_tools_sdk_py(tools(), share_types=True), "```python\n")
    classes = re.findall(r"^class (\w+)\(TypedDict\):", code, re.M)
    assert len(classes) == len(set(classes))
    assert code.count("    id: str") == 2  # the User and the {id} argument shape, once each
    assert code.count("city: str") == 1
    assert "async def get_user(self, args: GetUserArgs) -> GetUserOutput:" in code
    assert "async def suspend_user(self, args: GetUserArgs) -> GetUserOutput:" in code
    assert "users: list[GetUserOutput]" in code
    unshared = block(render_tools_sdk_py(tools()), "```python\n")
    assert unshared.count("city: str") == 3  # upstream's text: one Address class per use


def test_typescript_declares_repeated_objects_and_enums_once_as_types() -> None:
    """TS3/TS4: ``type`` aliases under ``JsonValue`` for the shared object and enum."""
    code = block(render_tools_sdk_ts(tools(), share_types=True), "```ts\n")
    assert code.count('"active" | "suspended" | "deleted"') == 1
    assert 'type Status = "active" | "suspended" | "deleted"' in code
    assert code.count("city: string;") == 1
    assert "  get_user: GetUserArgs;" in code and "  suspend_user: GetUserArgs;" in code
    assert "users: GetUserOutput[];" in code
    assert "  get_user: GetUserOutput;" in code
    unshared = block(render_tools_sdk_ts(tools()), "```ts\n")
    assert unshared.count("city: string;") == 3


def test_a_tool_set_without_repeats_renders_exactly_as_upstream() -> None:
    """TS6: sharing changes nothing when no shape repeats (upstream's pinned texts hold)."""
    distinct = [
        SdkTool("a", "A.", USER_ID, {"type": "string"}),
        SdkTool("b", "B.", {"type": "object", "properties": {"n": {"type": "integer"}}}, ADDRESS),
    ]
    assert render_tools_sdk_py(distinct, share_types=True) == render_tools_sdk_py(distinct)
    assert render_tools_sdk_ts(distinct, share_types=True) == render_tools_sdk_ts(distinct)


def test_the_shared_text_is_byte_identical_in_any_registration_order() -> None:
    """TS6: names come from the first use in render order (tools sorted by name), never
    from the order tools were registered in, so the prompt prefix stays cacheable."""
    first_py = render_tools_sdk_py(tools(), share_types=True)
    first_ts = render_tools_sdk_ts(tools(), share_types=True)
    shuffled = tools()
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert render_tools_sdk_py(shuffled, share_types=True) == first_py
        assert render_tools_sdk_ts(shuffled, share_types=True) == first_ts


async def echo(args: Any, _: Any) -> Any:
    return args


def test_the_prompt_sends_the_shared_sdk() -> None:
    """TS3: Code Mode's ``tools:sdk`` section is the shared rendering."""
    deployment = setup("code", language="python")
    for name in ("get_user", "suspend_user"):
        deployment.runtime.register(
            ToolDefinition(
                name=name, description=name, parameters=USER_ID, output=ToolOutput(schema=USER), execute=echo
            )
        )
    text = render_sdk(deployment.runtime, None)
    assert text.count("city: str") == 1
    assert "async def suspend_user(self, args: GetUserArgs) -> GetUserOutput:" in text


def test_mypy_accepts_the_shared_python_sdk_and_types_a_program_with_it(tmp_path: Path) -> None:
    """TS3: exact typing is kept — mypy --strict checks a program against the rendered SDK
    (a shared class is a real TypedDict: a wrong key and a wrong literal are both errors)."""
    code = block(render_tools_sdk_py(tools(), share_types=True), "```python\n")
    program = (
        "\n\nasync def main() -> None:\n"
        '    user = await tools.get_user({"id": "u1"})\n'
        '    city: str = user["address"]["city"]\n'
        '    page = await tools.list_users({"status": "active"})\n'
        '    ids = [u["id"] for u in page["users"]]\n'
        "    print(city, ids)\n"
    )
    good = tmp_path / "good.py"
    good.write_text(code + program)
    bad = tmp_path / "bad.py"
    bad.write_text(code + program.replace('"active"', '"gone"').replace('["city"]', '["town"]'))
    run = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c")]
    ok = subprocess.run([*run, str(good)], check=False, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout
    failed = subprocess.run([*run, str(bad)], check=False, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1
    assert "town" in failed.stdout and "gone" in failed.stdout


def test_python_names_a_repeated_enum_once_as_a_literal_alias() -> None:
    """TS4: the status enum on three fields is one ``Status = Literal[...]`` alias, which
    mypy reads as the same type (checked by the mypy test above)."""
    code = block(render_tools_sdk_py(tools(), share_types=True), "```python\n")
    assert code.count('Literal["active", "suspended", "deleted"]') == 1
    assert 'Status = Literal["active", "suspended", "deleted"]\n' in code
    assert "    status: Status\n" in code


def test_an_argument_the_tool_text_documents_is_not_described_twice() -> None:
    """TS5: ``- `q`: ...`` in the tool's description drops ``q``'s own description; a passing
    mention (no colon) keeps it."""
    parameters = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "The query text."},
            "limit": {"type": "integer", "description": "At most this many."},
        },
        "required": ["q"],
    }
    described = SdkTool("find", "Find things. - `q`: words to match. Use `limit` to cut.", parameters, STATUS)
    for render in (render_tools_sdk_py, render_tools_sdk_ts):
        shared = render([described], share_types=True)
        assert "The query text." not in shared and "At most this many." in shared
        assert "The query text." in render([described])


def test_a_cyclic_schema_still_renders_and_shares_nothing() -> None:
    """TS6: the renderers stay total with sharing on (a cycle degrades to ``Any``)."""
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    text = render_tools_sdk_py(
        [SdkTool("a", "", cyclic, cyclic), SdkTool("b", "", USER_ID, USER)], share_types=True
    )
    assert "async def a(self, args: Any) -> Any:" in text
    assert "unknown" in render_tools_sdk_ts([SdkTool("a", "", cyclic, cyclic)], share_types=True)


def test_python_marks_the_minority_of_keys_and_names_nested_classes_after_their_field(
    tmp_path: Path,
) -> None:
    """TS3: a class with mostly optional keys is ``total=False`` with ``Required[...]`` on the rest
    (the same keys typed, fewer tokens); a nested class is named after its field. mypy --strict
    still refuses a missing required key and accepts missing optional ones."""
    query = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "page": {"type": "integer"},
            "per_page": {"type": "integer"},
            "status": STATUS,
        },
        "required": ["q"],
        "additionalProperties": False,
    }
    code = block(
        render_tools_sdk_py([SdkTool("find_users", "Find.", query, USER)], share_types=True), "```python\n"
    )
    assert "class FindUsersArgs(TypedDict, total=False):\n    q: Required[str]\n    page: int\n" in code
    assert "class Address(TypedDict):" in code and "    address: Address\n" in code
    assert "from typing import Literal, Protocol, Required, TypedDict" in code
    program = code + '\n\nasync def main() -> None:\n    await tools.find_users({"q": "ann"})\n'
    good = tmp_path / "good.py"
    good.write_text(program)
    bad = tmp_path / "bad.py"
    bad.write_text(program.replace('{"q": "ann"}', '{"page": 2}'))
    run = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c")]
    ok = subprocess.run([*run, str(good)], check=False, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout
    failed = subprocess.run([*run, str(bad)], check=False, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and '"q"' in failed.stdout
