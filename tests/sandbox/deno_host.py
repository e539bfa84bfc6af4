"""A warm Deno runtime shared by a test module: one event loop on a thread of its own, so the
runtime's pool stays warm across tests (a new loop per test would drop it)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

from toolrt.codemode import CodeBindingNamespace, CodeRunLimits, CodeRunRequest, CodeRunResult
from toolrt.codemode._code_runtime import CodeErrorClass
from toolrt.sandbox import DenoTypeScriptRuntime

TOOL_ERROR = CodeErrorClass("ToolCallError", "toolName")


class DenoHost:
    """``run(program, ...)`` from synchronous tests, on one long-lived loop."""

    def __init__(self, backend: str, pool_size: int = 2) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runtime = DenoTypeScriptRuntime(backend=backend, pool_size=pool_size)  # type: ignore[arg-type]
        self.call(self.runtime.warm())

    def call(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def run(
        self,
        program: str,
        functions: dict[str, Any] | None = None,
        limits: CodeRunLimits | None = None,
    ) -> CodeRunResult:
        bindings = [CodeBindingNamespace("tools", functions or {}, TOOL_ERROR, "tool")]
        return self.call(self.runtime.run(CodeRunRequest(program=program, bindings=bindings, limits=limits)))

    def close(self) -> None:
        self.call(self.runtime.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()
