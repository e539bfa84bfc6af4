"""The input of the Code Mode SDK renderers: one tool as the model-facing SDK declares it.

Shared by the TypeScript renderer (:mod:`toolrt.codemode._sdk_typescript`) and the Python renderer
(:mod:`toolrt.codemode._sdk_python`), which are two projections of the same tool set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SdkTool"]


@dataclass(frozen=True)
class SdkTool:
    """One tool of the SDK: its name, description, argument schema and canonical output schema.

    Upstream ``ToolSdkSchema`` (``ToolSchema`` plus ``output``). ``parameters`` and ``output`` are raw
    JSON-Schema subset nodes; a schema outside the subset renders as the renderer's "unknown" type
    instead of failing the whole SDK.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    output: Mapping[str, Any]
