"""Text is valid UTF-8 end to end (issue 12 item 6): a lone surrogate is refused as not lossless at
every boundary a value crosses, so the model, the log and the terminal only ever get encodable text.

One test per boundary: the lossless check itself (strings and keys, at every depth and on every fast
path), native arguments (a value and a key), a tool's return value, a content block's text, and, in
the real sandbox through the ``run_code`` pipeline, Code Mode binding arguments, a program's print
and its return value. The session log and the CLI's stdout have theirs beside their own tests
(tests/loop/test_session_log.py, tests/cli/test_user_mistakes.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolrt import NotLosslessJsonError, ToolRuntime, define_tool, tool
from toolrt._content import content_text
from toolrt._errors import UnencodableTextError
from toolrt._json import LONE_SURROGATE, has_lone_surrogate
from toolrt.lowlevel import FrozenDict, FrozenList, is_lossless_json, snapshot_json
from toolrt.sandbox import PythonSandboxRuntime

LONE = ["\ud800", "\udbff", "\udc00", "\udfff", "ok\udcff", "é\ud800", "\U0001f600\udc80"]


def assert_encodable(text: str) -> None:
    text.encode("utf-8")  # raises UnicodeEncodeError on any surrogate


# --- the lossless check -------------------------------------------------------------------------


@pytest.mark.parametrize("text", LONE)
@pytest.mark.parametrize(
    ("wrap", "path"),
    [
        (lambda s: s, "value"),  # a bare string (the scalar fast path)
        (lambda s: {"a": s}, "value.a"),  # a flat dict (the C-speed copy)
        (lambda s: [s], "value[0]"),  # a flat list
        (lambda s: [{"a": s}], "value[0].a"),  # a content-block-shaped list
        (lambda s: {"a": [1, {"b": s}]}, "value.a[1].b"),  # the general walk
        (lambda s: ("x", s), "value[1]"),  # a tuple
    ],
)
def test_a_lone_surrogate_in_a_string_is_not_lossless(text: str, wrap: Any, path: str) -> None:
    value = wrap(text)
    with pytest.raises(UnencodableTextError) as caught:
        snapshot_json(value)
    assert isinstance(caught.value, NotLosslessJsonError)
    assert (caught.value.path, caught.value.reason) == (path, LONE_SURROGATE)
    assert not is_lossless_json(value)


@pytest.mark.parametrize("key", LONE)
@pytest.mark.parametrize(
    ("wrap", "path"),
    [(lambda k: {k: 1}, "value"), (lambda k: {"a": {k: "x"}}, "value.a"), (lambda k: [{k: 1}], "value[0]")],
)
def test_a_lone_surrogate_in_a_key_is_not_lossless_and_the_message_is_encodable(
    key: str, wrap: Any, path: str
) -> None:
    with pytest.raises(UnencodableTextError) as caught:
        snapshot_json(wrap(key))
    assert caught.value.path == path
    assert caught.value.reason.startswith("object key ") and caught.value.reason.endswith(LONE_SURROGATE)
    assert_encodable(str(caught.value))  # the key is quoted escaped, never raw


def test_frozen_containers_refuse_one_too() -> None:
    with pytest.raises(UnencodableTextError):
        FrozenDict({"a": "\ud800"})
    with pytest.raises(UnencodableTextError):
        FrozenList(["\udfff"])


def test_valid_text_of_every_width_is_lossless() -> None:
    value = {
        "ascii": "a",
        "latin": "é",
        "bmp": "中文",
        "astral": "\U0001f600",
        "é": ["ü", {"中": "\U0010ffff"}],
    }
    assert snapshot_json(value) == value
    # A well-formed escaped pair in JSON text is one astral character, not two surrogates.
    assert snapshot_json(json.loads('{"s": "\\ud83d\\ude00"}')) == {"s": "\U0001f600"}


def test_schema_text_may_keep_lone_surrogates_when_asked() -> None:
    """Schemas follow upstream's contract (JavaScript strings; the SDK renderers escape lone
    surrogates), so their checks opt out; nothing else does."""
    schema = {"type": "string", "description": "a\ud800", "enum": ["\udfff"], "properties": {"k\udc00": {}}}
    assert snapshot_json(schema, lone_surrogates=True) == schema
    assert snapshot_json("\ud800", lone_surrogates=True) == "\ud800"
    assert is_lossless_json(schema, lone_surrogates=True)
    assert not is_lossless_json(schema)
    with pytest.raises(NotLosslessJsonError, match="NaN"):
        snapshot_json({"a": "\ud800", "b": float("nan")}, lone_surrogates=True)  # the other rules hold


def test_has_lone_surrogate() -> None:
    assert not has_lone_surrogate("")
    assert not has_lone_surrogate("plain ascii")
    assert not has_lone_surrogate("é 中 \U0001f600 \ufffd \U0010ffff")
    for text in LONE:
        assert has_lone_surrogate(text)


# --- native calls --------------------------------------------------------------------------------


@tool
async def echo(text: str = "", data: dict[str, int] | None = None) -> str:
    """Echo the text."""
    return text


@tool
async def lossy_value(kind: str) -> Any:
    """Return a lossy value."""
    return {"value": "ok\udcff"} if kind == "value" else {"nested": [{"\ud800": 1}]}


def render_lossy(arguments: Any, value: Any) -> Any:
    return [{"type": "text", "text": "rendered \udc80"}]


@pytest.fixture
def native() -> ToolRuntime:
    runtime = ToolRuntime()
    runtime.register(echo)
    runtime.register(lossy_value)
    runtime.register(
        define_tool(
            name="lossy_content",
            description="Render content with a lone surrogate.",
            parameters={},
            output={"schema": {"type": "string"}, "render": render_lossy},
            execute=lambda args, ctx: "fine",
        )
    )
    return runtime


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"text": "ok\udcff"}, '"text"'),
        ({"text": "a", "data": {"k\ud800": 1}}, '"data" is not valid UTF-8 text (object key "k\\ud800"'),
        ({"\udfff": "x"}, '"arguments" is not valid UTF-8 text (object key "\\udfff"'),
    ],
)
async def test_native_arguments_with_a_lone_surrogate_are_invalid_args_naming_the_path(
    native: ToolRuntime, arguments: dict[str, Any], where: str
) -> None:
    result = await native.call("echo", arguments)
    assert result.is_error
    assert result.error.info is not None and result.error.info.code == "INVALID_ARGS"  # type: ignore[union-attr]
    text = content_text(result.content)
    assert text.startswith("Error: invalid arguments: ") and where in text
    assert text.endswith("lone surrogate in a string)")
    assert_encodable(text)


async def test_a_return_value_with_a_lone_surrogate_is_invalid_output_naming_the_path(
    native: ToolRuntime,
) -> None:
    for kind, where in (
        ("value", "value.value: lone surrogate in a string"),
        ("key", "value.nested[0]: object key"),
    ):
        result = await native.call("lossy_value", {"kind": kind})
        assert result.is_error
        assert result.error.info is not None and result.error.info.code == "INVALID_TOOL_OUTPUT"  # type: ignore[union-attr]
        text = content_text(result.content)
        assert text.startswith('Error: tool "lossy_value" returned invalid output: ') and where in text
        assert_encodable(text)


async def test_a_content_block_with_a_lone_surrogate_is_invalid_output(native: ToolRuntime) -> None:
    result = await native.call("lossy_content", {})
    assert result.is_error
    assert result.error.info is not None and result.error.info.code == "INVALID_TOOL_OUTPUT"  # type: ignore[union-attr]
    text = content_text(result.content)
    assert "output.render returned non-lossless JSON (value[0].text: lone surrogate in a string)" in text
    assert_encodable(text)


async def test_an_error_message_with_a_lone_surrogate_reaches_the_model_encodable(
    native: ToolRuntime,
) -> None:
    @tool
    async def fails() -> str:
        """Fail with unencodable text."""
        raise ValueError("bad \ud800 input")

    native.register(fails)
    result = await native.call("fails")
    assert result.is_error
    assert_encodable(content_text(result.content))
    assert_encodable(result.error.message)  # type: ignore[union-attr]
    assert "bad " in result.error.message and " input" in result.error.message  # type: ignore[union-attr]


# --- Code Mode, in the real sandbox --------------------------------------------------------------


@pytest.fixture
async def code_mode() -> AsyncIterator[ToolRuntime]:
    sandbox = PythonSandboxRuntime(pool_size=0)
    runtime = ToolRuntime(mode="code", code_runtime=sandbox)
    seen: list[Any] = []

    @tool
    async def record(text: str = "", data: dict[str, int] | None = None) -> str:
        """Record the arguments."""
        seen.append(text)
        return "recorded"

    runtime.register(record)
    runtime.seen = seen  # type: ignore[attr-defined]
    yield runtime
    await sandbox.aclose()


async def run_code(runtime: ToolRuntime, program: str) -> tuple[bool, str]:
    result = await runtime.call("run_code", {"code": program, "description": "boundary test"})
    text = content_text(result.content)
    assert_encodable(text)
    return result.is_error, text


async def test_code_mode_binding_arguments_with_a_lone_surrogate_never_reach_the_tool(
    code_mode: ToolRuntime,
) -> None:
    program = (
        "out = []\n"
        "for args in ({'text': 'ok\\udcff'}, {'data': {'\\ud800': 1}}):\n"
        "    try:\n"
        "        out.append(await tools.record(args))\n"
        "    except Exception as error:\n"
        "        out.append(str(error))\n"
        "return out\n"
    )
    failed, text = await run_code(code_mode, program)
    assert not failed, text
    assert text.count("lossless JSON") == 2, text
    assert code_mode.seen == []  # type: ignore[attr-defined]


async def test_a_program_printing_a_lone_surrogate_fails_with_encodable_text(code_mode: ToolRuntime) -> None:
    failed, text = await run_code(code_mode, "print('before')\nprint('ok\\udcff')\n")
    assert failed
    assert text.startswith("Error: code run failed (exception):")
    assert "UnicodeEncodeError" in text and "before" in text


@pytest.mark.parametrize("program", ["return 'ok\\udcff'", "return {'\\ud800': 1}", "return ['\\udfff']"])
async def test_a_program_returning_a_lone_surrogate_is_invalid_output(
    code_mode: ToolRuntime, program: str
) -> None:
    failed, text = await run_code(code_mode, program)
    assert failed
    assert text.startswith(
        "Error: code run failed (invalid-output): program completion must be lossless JSON"
    )
