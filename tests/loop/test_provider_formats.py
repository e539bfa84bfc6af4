"""Conversions between the neutral conversation and the OpenAI / Anthropic wire formats.

Pure functions, no network. Outgoing payloads are validated against the official packages'
TypedDicts (pydantic ``TypeAdapter``), incoming ones are built as the packages' response models.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import MessageParam, ToolParam
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam, ChatCompletionToolUnionParam
from pydantic import TypeAdapter

from helpers import text
from toolrt import ToolSchema
from toolrt.loop import (
    RAW_ARGUMENTS_KEY,
    ConversationError,
    from_anthropic_message,
    from_openai_message,
    to_anthropic_messages,
    to_anthropic_tools,
    to_openai_messages,
    to_openai_tools,
)
from toolrt.loop._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def materialize(value: Any) -> Any:
    """Force pydantic's lazy ``Iterable`` validators so every nested item is really validated."""
    if isinstance(value, Mapping):
        return {key: materialize(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return [materialize(item) for item in value]
    return value


# Module-level: a lazy validator iterator must not outlive its adapter (pydantic-core panics).
OPENAI_MESSAGES = TypeAdapter(list[ChatCompletionMessageParam])
OPENAI_TOOLS = TypeAdapter(list[ChatCompletionToolUnionParam])
ANTHROPIC_MESSAGES = TypeAdapter(list[MessageParam])
ANTHROPIC_TOOLS = TypeAdapter(list[ToolParam])


def valid_openai(messages: list[ChatCompletionMessageParam]) -> None:
    materialize(OPENAI_MESSAGES.validate_python(messages))


def valid_anthropic(messages: list[MessageParam]) -> None:
    materialize(ANTHROPIC_MESSAGES.validate_python(messages))


SCHEMAS: list[ToolSchema] = [
    {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {"name": "now", "description": "", "parameters": {"type": "object", "properties": {}}},
]

CALL_A = ToolCall("call_a", "add", '{"a": 1, "b": 2}')
CALL_B = ToolCall("call_b", "mul", '{"x":3,"y":4}')
CALL_C = ToolCall("call_c", "now", "")


def conversation() -> list[Message]:
    """Two parallel calls whose results arrive in completion order, with a context in between."""
    return [
        UserMessage(text("add and multiply")),
        AssistantMessage(text="Computing.", tool_calls=(CALL_A, CALL_B), reasoning="think", stop_reason="x"),
        ToolResultMessage("call_b", "mul", text("12")),
        UserMessage(text("units are metres"), id="ctx-1", source={"kind": "plugin", "plugin": "units"}),
        ToolResultMessage("call_a", "add", text('Error: "a" is too small'), is_error=True),
        AssistantMessage(text="1+2 failed; 3*4 is 12."),
        UserMessage(
            [{"type": "text", "text": "look"}, {"type": "image", "data": "aGk=", "mimeType": "image/png"}]
        ),
    ]


# --- tools ----------------------------------------------------------------------------------------


def test_openai_tools_have_the_function_shape() -> None:
    tools = to_openai_tools(SCHEMAS)
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": SCHEMAS[0]["parameters"],
            },
        },
        {
            "type": "function",
            "function": {
                "name": "now",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    materialize(OPENAI_TOOLS.validate_python(tools))
    assert tools[0]["function"]["parameters"] is not SCHEMAS[0]["parameters"]  # never aliased


def test_anthropic_tools_use_input_schema() -> None:
    tools = to_anthropic_tools(SCHEMAS)
    assert tools == [
        {"name": "add", "description": "Add two integers.", "input_schema": SCHEMAS[0]["parameters"]},
        {"name": "now", "description": "", "input_schema": {"type": "object", "properties": {}}},
    ]
    materialize(ANTHROPIC_TOOLS.validate_python(tools))


def test_tool_schema_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="mapping"):
        to_openai_tools([object()])  # type: ignore[list-item]


# --- OpenAI: outgoing -----------------------------------------------------------------------------


def test_openai_messages_pair_results_in_call_order_then_contexts() -> None:
    messages = to_openai_messages("You are terse.", conversation())
    assert messages == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "add and multiply"},
        {
            "role": "assistant",
            "content": "Computing.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "mul", "arguments": '{"x":3,"y":4}'},
                },
            ],
            "reasoning_content": "think",
        },
        # Reordered to the assistant's call order, although call_b finished first.
        {"role": "tool", "tool_call_id": "call_a", "content": 'Error: "a" is too small'},
        {"role": "tool", "tool_call_id": "call_b", "content": "12"},
        # The additional context follows every tool message (OpenAI rejects a user message between them).
        {"role": "user", "content": "units are metres"},
        {"role": "assistant", "content": "1+2 failed; 3*4 is 12."},
        {"role": "user", "content": "look\n[image content]"},
    ]
    valid_openai(messages)


def test_openai_messages_keep_raw_argument_text_even_when_malformed() -> None:
    bad = ToolCall("c1", "add", '{"a": 1,')
    messages = to_openai_messages(
        "",
        [
            UserMessage(text("go")),
            AssistantMessage(tool_calls=(bad,)),
            ToolResultMessage("c1", "add", text("Error: invalid arguments"), is_error=True),
        ],
    )
    assistant = messages[1]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1,'}}
        ],
    }
    assert messages[0] == {"role": "user", "content": "go"}  # no system message when the prompt is empty
    valid_openai(messages)


def test_openai_reasoning_is_sent_back_only_on_tool_call_turns_and_can_be_disabled() -> None:
    convo: list[Message] = [
        UserMessage(text("q")),
        AssistantMessage(text="a", reasoning="plain turn thinking"),
        UserMessage(text("q2")),
        AssistantMessage(tool_calls=(CALL_C,), reasoning="tool turn thinking"),
        ToolResultMessage("call_c", "now", text("noon")),
    ]
    messages = to_openai_messages("", convo)
    assert "reasoning_content" not in messages[1]
    assert messages[3].get("reasoning_content") == "tool turn thinking"
    assert all("reasoning_content" not in m for m in to_openai_messages("", convo, include_reasoning=False))


def test_openai_system_messages_stay_in_place() -> None:
    messages = to_openai_messages("first", [UserMessage(text("u")), SystemMessage("later")])
    assert messages == [
        {"role": "system", "content": "first"},
        {"role": "user", "content": "u"},
        {"role": "system", "content": "later"},
    ]


# --- pairing errors (both providers) --------------------------------------------------------------

BROKEN: dict[str, tuple[list[Message], str]] = {
    "missing result": (
        [
            UserMessage(text("u")),
            AssistantMessage(tool_calls=(CALL_A, CALL_B)),
            ToolResultMessage("call_a", "add", []),
        ],
        r'tool call "call_b" \(mul\) has no result',
    ),
    "dangling call at the end": (
        [UserMessage(text("u")), AssistantMessage(tool_calls=(CALL_A,))],
        r'tool call "call_a" \(add\) has no result',
    ),
    "result without a call": (
        [UserMessage(text("u")), AssistantMessage(text="hi"), ToolResultMessage("call_z", "add", [])],
        r'tool result for call "call_z" \(add\) at position 2 has no matching tool call',
    ),
    "result for another turn's call": (
        [
            AssistantMessage(tool_calls=(CALL_A,)),
            ToolResultMessage("call_a", "add", []),
            AssistantMessage(tool_calls=(CALL_B,)),
            ToolResultMessage("call_a", "add", []),
            ToolResultMessage("call_b", "mul", []),
        ],
        r'"call_a" \(add\) at position 3 has no matching tool call',
    ),
    "two results for one call": (
        [
            AssistantMessage(tool_calls=(CALL_A,)),
            ToolResultMessage("call_a", "add", []),
            ToolResultMessage("call_a", "add", []),
        ],
        r'"call_a" \(add\) has more than one result',
    ),
    "duplicate call ids": (
        [AssistantMessage(tool_calls=(CALL_A, CALL_A))],
        r'two tool calls with id "call_a"',
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_pairing_raises_before_anything_is_sent(case: str) -> None:
    messages, pattern = BROKEN[case]
    with pytest.raises(ConversationError, match=pattern) as openai_error:
        to_openai_messages("", messages)
    with pytest.raises(ConversationError, match=pattern):
        to_anthropic_messages(messages)
    assert openai_error.value.code == "INVALID_CONVERSATION"
    assert isinstance(openai_error.value, ValueError)


def test_missing_results_are_all_named() -> None:
    with pytest.raises(ConversationError, match=r'"call_a" \(add\), "call_b" \(mul\) have no result'):
        to_openai_messages("", [AssistantMessage(tool_calls=(CALL_A, CALL_B))])


def test_a_non_message_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not a conversation message"):
        to_openai_messages("", [{"role": "user", "content": "hi"}])  # type: ignore[list-item]


# --- OpenAI: incoming -----------------------------------------------------------------------------


def test_from_openai_message_keeps_raw_arguments_and_reasoning() -> None:
    wire = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": "calling",
            "reasoning_content": "because",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":1'}},
                {"id": "c2", "type": "custom", "custom": {"name": "patch", "input": "*** free text"}},
            ],
        }
    )
    message = from_openai_message(wire, finish_reason="tool_calls")
    assert message == AssistantMessage(
        text="calling",
        tool_calls=(ToolCall("c1", "add", '{"a":1'), ToolCall("c2", "patch", "*** free text")),
        reasoning="because",
        stop_reason="tool_calls",
    )


def test_from_openai_message_reads_vllm_reasoning_and_refusals() -> None:
    wire = ChatCompletionMessage.model_validate({"role": "assistant", "content": None, "reasoning": "hmm"})
    assert from_openai_message(wire) == AssistantMessage(reasoning="hmm")
    refusal = ChatCompletionMessage.model_validate({"role": "assistant", "content": None, "refusal": "no."})
    assert from_openai_message(refusal).text == "no."


def test_openai_round_trip_of_an_assistant_turn() -> None:
    original = AssistantMessage(text="Computing.", tool_calls=(CALL_A, CALL_B, CALL_C), reasoning="think")
    results = [ToolResultMessage(c.id, c.name, text("ok")) for c in original.tool_calls]
    wire = to_openai_messages("", [original, *results])[0]
    back = from_openai_message(ChatCompletionMessage.model_validate(wire))
    assert back == original


# --- Anthropic: outgoing --------------------------------------------------------------------------


def test_anthropic_messages_put_all_results_in_one_user_message_in_call_order() -> None:
    system, messages = to_anthropic_messages([SystemMessage("Be terse."), *conversation()], system="Base.")
    assert system == "Base.\n\nBe terse."
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "add and multiply"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Computing."},
                {"type": "tool_use", "id": "call_a", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "call_b", "name": "mul", "input": {"x": 3, "y": 4}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a",
                    "content": [{"type": "text", "text": 'Error: "a" is too small'}],
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "call_b", "content": [{"type": "text", "text": "12"}]},
                # The additional context rides in the same user message, after the results.
                {"type": "text", "text": "units are metres"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "1+2 failed; 3*4 is 12."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
            ],
        },
    ]
    valid_anthropic(messages)


def test_anthropic_arguments_become_objects_without_losing_malformed_text() -> None:
    calls = (
        ToolCall("c1", "add", '{"a": 1,'),  # malformed
        ToolCall("c2", "add", "[1, 2]"),  # JSON, but not an object
        ToolCall("c3", "now", "  "),  # no arguments
    )
    convo: list[Message] = [
        UserMessage(text("go")),
        AssistantMessage(tool_calls=calls),
        *(ToolResultMessage(c.id, c.name, []) for c in calls),
    ]
    _, messages = to_anthropic_messages(convo)
    blocks: list[Any] = list(messages[1]["content"])
    inputs = [block["input"] for block in blocks]
    assert inputs == [{RAW_ARGUMENTS_KEY: '{"a": 1,'}, {RAW_ARGUMENTS_KEY: "[1, 2]"}, {}]
    # Empty results carry no content (the API rejects empty text blocks).
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1"},
        {"type": "tool_result", "tool_use_id": "c2"},
        {"type": "tool_result", "tool_use_id": "c3"},
    ]
    valid_anthropic(messages)


def test_anthropic_merges_adjacent_turns_and_flattens_unknown_blocks() -> None:
    _, messages = to_anthropic_messages(
        [
            UserMessage(text("one")),
            AssistantMessage(),  # empty: dropped, so the two user turns merge
            UserMessage([{"type": "audio", "data": "..."}, {"type": "text", "text": ""}]),
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "[audio content]"}],
        }
    ]


# --- Anthropic: incoming --------------------------------------------------------------------------


def anthropic_response(content: list[dict[str, Any]], stop_reason: str = "tool_use") -> AnthropicMessage:
    return AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def test_from_anthropic_message_reads_text_tool_use_and_thinking() -> None:
    response = anthropic_response(
        [
            {"type": "thinking", "thinking": "Let me add.", "signature": "sig"},
            {"type": "text", "text": "Adding "},
            {"type": "text", "text": "now."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": "é"}},
            {"type": "redacted_thinking", "data": "xyz"},
        ]
    )
    message = from_anthropic_message(response)
    assert message == AssistantMessage(
        text="Adding now.",
        tool_calls=(ToolCall("toolu_1", "add", json.dumps({"a": 1, "b": "é"}, ensure_ascii=False)),),
        reasoning="Let me add.",
        stop_reason="tool_use",
    )
    assert json.loads(message.tool_calls[0].arguments) == {"a": 1, "b": "é"}


def test_anthropic_round_trip_of_an_assistant_turn() -> None:
    original = AssistantMessage(
        text="Computing.",
        tool_calls=(ToolCall("toolu_1", "add", '{"a": 1, "b": 2}'), ToolCall("toolu_2", "now", "{}")),
        stop_reason="tool_use",
    )
    results = [ToolResultMessage(c.id, c.name, text("ok")) for c in original.tool_calls]
    _, messages = to_anthropic_messages([UserMessage(text("go")), original, *results])
    back = from_anthropic_message(anthropic_response(list(messages[1]["content"])))  # type: ignore[arg-type]
    assert back == original


# --- packaging ------------------------------------------------------------------------------------


def test_importing_toolrt_and_the_adapters_does_not_import_the_providers() -> None:
    code = (
        "import sys, toolrt, toolrt.loop, toolrt.loop._openai_model, toolrt.loop._scripted_model\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in {'openai', 'anthropic'})\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
