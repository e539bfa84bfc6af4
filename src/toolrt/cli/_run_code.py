"""``toolrt run-code``: one program through the real ``run_code`` pipeline, from a file or stdin."""

from __future__ import annotations

import json
import os
import signal as signals
import sys
from typing import Any

from toolrt._abort import AbortController
from toolrt._content import content_text
from toolrt._execution import ToolExecutionInput
from toolrt._tool_runtime import ToolRuntime
from toolrt.codemode._code_runtime import CodeRunLimits
from toolrt.sandbox import PythonSandboxRuntime
from toolrt.tools import file_tools


async def run_code_command(source: str, *, backend: Any, allow_unconfined: bool, timeout: float) -> int:
    """Run the program; print its output (stdout) or its error (stderr) and the isolation (stderr)."""
    import asyncio

    program = sys.stdin.read() if source == "-" else open(source, encoding="utf-8").read()  # noqa: SIM115
    code_runtime = PythonSandboxRuntime(
        pool_size=0,
        backend=backend,
        allow_unconfined=allow_unconfined or backend == "unconfined",
        limits=CodeRunLimits(wall_seconds=timeout),
    )
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime)
    for definition in file_tools(os.getcwd()):
        runtime.register(definition)
    controller = AbortController()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signals.SIGINT, controller.abort, "interrupted (SIGINT)")
    try:
        result = await runtime.execute(
            ToolExecutionInput(
                call_id="run-code-1",
                name="run_code",
                arguments={"code": program, "description": f"toolrt run-code {source}"},
                signal=controller.signal,
            )
        )
    finally:
        loop.remove_signal_handler(signals.SIGINT)
        await code_runtime.aclose()
    isolation = (result.meta or {}).get("isolation") if isinstance(result.meta, dict) else None
    if isolation is None:
        isolation = code_runtime.isolation.as_json()
    if result.is_error:
        error = result.error
        info = error.info
        print(content_text(result.content), file=sys.stderr)
        structured = {
            "message": error.message,
            "code": info.code if info else None,
            "name": info.name if info else None,
        }
        print(json.dumps({"error": structured}, ensure_ascii=False), file=sys.stderr)
    else:
        print(content_text(result.content))
    layers = ", ".join(isolation.get("layers") or []) or "none"
    print(
        f"isolation: {isolation.get('enforcement')} ({layers}; Landlock ABI {isolation.get('landlockAbi')})",
        file=sys.stderr,
    )
    return 1 if result.is_error else 0
