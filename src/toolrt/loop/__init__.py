"""The agent loop: a model, a system prompt and a session log around one :class:`~toolrt.ToolRuntime`.

::

    from toolrt import Agent, OpenAIChatModel, ToolRuntime

    agent = Agent(ToolRuntime(), OpenAIChatModel(model="gpt-4.1-mini"), instructions="Be brief.")
    result = await agent.turn("What is 2 + 2?")

The loop runs each model step's calls through the runtime's ordered executor: policy in model
order, concurrency-safe calls overlapped, results committed in order, so the conversation never
holds a call without its result. The session log is the source of truth: the conversation is
derived from it, and a reopened log resumes it.
"""

from toolrt._errors import InvalidEventError, ScriptExhaustedError, SessionLogError
from toolrt._prompt import Section, SystemPrompt, connect_runtime, runtime_chain
from toolrt.loop._agent import Agent, TurnResult
from toolrt.loop._anthropic_format import (
    RAW_ARGUMENTS_KEY,
    from_anthropic_message,
    to_anthropic_messages,
    to_anthropic_tools,
)
from toolrt.loop._anthropic_model import AnthropicModel
from toolrt.loop._chat_model import ChatModel, ModelResponse, TextDelta
from toolrt.loop._derive import INCOMPLETE_CALL_TEXT, derive_messages
from toolrt.loop._messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from toolrt.loop._openai_format import from_openai_message, reasoning_of, to_openai_messages, to_openai_tools
from toolrt.loop._openai_model import OpenAIChatModel
from toolrt.loop._replay import ReplayItem, render_call_card, render_result_card, replay
from toolrt.loop._scripted_model import ScriptedModel, ScriptStep
from toolrt.loop._session_events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    CODE_DISPATCH,
    CODE_DISPATCH_START,
    CONTEXT_ADDED,
    MODEL_ASSISTANT,
    MODEL_USER,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Event,
    NewEvent,
    TurnEndReason,
    approval_asked_event,
    approval_decided_event,
    code_dispatch_event,
    code_dispatch_start_event,
    context_added_event,
    model_assistant_event,
    model_user_event,
    tool_call_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)
from toolrt.loop._session_log import Durability, ReadResult, SessionLog, SessionLogCorruptError, TornLine
from toolrt.loop._tool_search import TOOL_SEARCH_NAME, NativeToolSearch
from toolrt.loop._turns import ConversationError

__all__ = [
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "CODE_DISPATCH",
    "CODE_DISPATCH_START",
    "CONTEXT_ADDED",
    "INCOMPLETE_CALL_TEXT",
    "MODEL_ASSISTANT",
    "MODEL_USER",
    "RAW_ARGUMENTS_KEY",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TOOL_SEARCH_NAME",
    "TURN_END",
    "TURN_START",
    "Agent",
    "AnthropicModel",
    "AssistantMessage",
    "ChatModel",
    "ConversationError",
    "Durability",
    "Event",
    "InvalidEventError",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "NativeToolSearch",
    "NewEvent",
    "OpenAIChatModel",
    "ReadResult",
    "ReplayItem",
    "ScriptExhaustedError",
    "ScriptStep",
    "ScriptedModel",
    "Section",
    "SessionLog",
    "SessionLogCorruptError",
    "SessionLogError",
    "SystemMessage",
    "SystemPrompt",
    "TextDelta",
    "ToolCall",
    "ToolResultMessage",
    "TornLine",
    "TurnEndReason",
    "TurnResult",
    "Usage",
    "UserMessage",
    "approval_asked_event",
    "approval_decided_event",
    "code_dispatch_event",
    "code_dispatch_start_event",
    "connect_runtime",
    "context_added_event",
    "derive_messages",
    "from_anthropic_message",
    "from_openai_message",
    "model_assistant_event",
    "model_user_event",
    "reasoning_of",
    "render_call_card",
    "render_result_card",
    "replay",
    "runtime_chain",
    "to_anthropic_messages",
    "to_anthropic_tools",
    "to_openai_messages",
    "to_openai_tools",
    "tool_call_event",
    "tool_result_event",
    "turn_end_event",
    "turn_start_event",
]
