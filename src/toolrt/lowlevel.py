"""toolrt.lowlevel: the machinery under :class:`toolrt.ToolRuntime`, for people who build on it.

Most users never import this module. It is for the few who write their own scheduler or plug a new
way of presenting tools into the core, as ``trio.lowlevel`` is for people who write their own
primitives. Everything here is as stable as the rest of the public API (``tests/test_public_api.py``
pins it), but it exposes the pipeline's moving parts, so using it wrongly can break the promises the
high-level API keeps (one result per call, policy in model order).

- **The stages of one call**: :class:`Pipeline` (``runtime.stages``) with its create → prepare →
  dispatch → commit steps, :class:`Prepared` and :class:`DispatchOutcome`; a call in flight is a
  :class:`ToolExecution`, identified to its sub-calls by an :class:`ExecutionToken`.
- **The one ordering contract of a batch**: :class:`OrderedExecutor` and :class:`OrderedCall` (the
  native scheduler and the Code Mode bridge are both built on it).
- **The seams**: :func:`use_code_presentation` (what builds a runtime's transport tool,
  :class:`CodePresentation`) and :func:`use_presentation_prompt` (what contributes the prompt of a
  non-native presentation, :class:`PresentationPrompt`). ``toolrt`` plugs Code Mode into both.
- **Sinks**: :data:`EventSink`, what ``runtime.bind_session`` and ``Approvals(audit=...)`` take.
- **Values**: the frozen lossless JSON snapshot (:func:`snapshot_json`, :func:`thaw`,
  :func:`is_lossless_json`, :class:`FrozenDict`, :class:`FrozenList`, :data:`MAX_SAFE_INTEGER`), and
  how results are made (:func:`tool_error_result`, :func:`render_value_as_text`, :class:`ToolError`,
  :class:`ToolErrorInfo`, :data:`UNSET`), and the two abort codes (:data:`TOOL_ABORTED`: the body
  ran; :data:`TOOL_ABORTED_BEFORE_DISPATCH`: it never started).
"""

from toolrt._abort import fuse_signals
from toolrt._decisions import UNSET
from toolrt._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH
from toolrt._events import EventSink, Listener
from toolrt._execution import ExecutionToken, ToolExecution
from toolrt._json import MAX_SAFE_INTEGER, FrozenDict, FrozenList, is_lossless_json, snapshot_json, thaw
from toolrt._ordered_executor import CallOutcome, OrderedCall, OrderedExecutor
from toolrt._pipeline import DispatchOutcome, Pipeline, Prepared
from toolrt._prompt import PresentationPrompt, PresentationSection, use_presentation_prompt
from toolrt._registry import ToolGuard, ToolsChange, Transport
from toolrt._results import ToolError, ToolErrorInfo, tool_error_result
from toolrt._tool_definition import PresentedResult, render_value_as_text
from toolrt._tool_runtime import CodePresentation, use_code_presentation

__all__ = [
    "MAX_SAFE_INTEGER",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "UNSET",
    "CallOutcome",
    "CodePresentation",
    "DispatchOutcome",
    "EventSink",
    "ExecutionToken",
    "FrozenDict",
    "FrozenList",
    "Listener",
    "OrderedCall",
    "OrderedExecutor",
    "Pipeline",
    "Prepared",
    "PresentationPrompt",
    "PresentationSection",
    "PresentedResult",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolGuard",
    "ToolsChange",
    "Transport",
    "fuse_signals",
    "is_lossless_json",
    "render_value_as_text",
    "snapshot_json",
    "thaw",
    "tool_error_result",
    "use_code_presentation",
    "use_presentation_prompt",
]
