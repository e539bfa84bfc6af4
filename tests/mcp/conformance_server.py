"""The conformance suite's fixture tools as ordinary toolrt tools, served natively over streamable HTTP.

``python conformance_server.py PORT`` serves them at ``http://127.0.0.1:PORT/mcp``. The suite's
``tools-call-*`` scenarios call tools only its reference server defines (``test_simple_text``,
``test_image_content``, ...); here they are plain ``@tool`` bodies, so the scenarios check what
toolrt's serving does with any tool: content blocks mapped to MCP content, a failing body as
``isError``, progress reported through the session sink reaching the client as
``notifications/progress``, and Python logging inside a call reaching it as ``notifications/message``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import sys
import wave
from typing import Any

from toolrt import ToolRunContext, ToolRuntime, tool
from toolrt.mcp import serve_http

# A 1x1 red PNG, the smallest image a client can decode.
RED_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

logger = logging.getLogger("conformance.fixture")
logger.setLevel(logging.DEBUG)  # which records exist is the logger's choice; the client filters further


def _silent_wav() -> str:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(8000)
        audio.writeframes(b"\0\0" * 80)
    return base64.b64encode(buffer.getvalue()).decode()


def _image(args: Any, value: Any) -> list[dict[str, Any]]:
    return [{"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}]


def _audio(args: Any, value: Any) -> list[dict[str, Any]]:
    return [{"type": "audio", "data": _silent_wav(), "mimeType": "audio/wav"}]


def _resource(args: Any, value: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "resource",
            "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": value},
        }
    ]


def _mixed(args: Any, value: Any) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": '{"test":"data","value":123}',
            },
        },
    ]


@tool
async def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@tool(render=_image)
async def test_image_content() -> str:
    """Returns a 1x1 red PNG."""
    return "a red pixel"


@tool(render=_audio)
async def test_audio_content() -> str:
    """Returns a short silent WAV."""
    return "silence"


@tool(render=_resource)
async def test_embedded_resource() -> str:
    """Returns an embedded text resource."""
    return "This is an embedded resource content."


@tool(render=_mixed)
async def test_multiple_content_types() -> str:
    """Returns text, an image and an embedded resource."""
    return "mixed"


@tool
async def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@tool
async def test_tool_with_logging() -> str:
    """Logs three lines while it runs."""
    logger.info("Tool execution started")
    await asyncio.sleep(0.05)
    logger.info("Tool processing data")
    await asyncio.sleep(0.05)
    logger.info("Tool execution completed")
    return "Logging test completed"


def build_runtime() -> ToolRuntime:
    runtime = ToolRuntime()

    @tool
    async def test_tool_with_progress(ctx: ToolRunContext) -> str:
        """Reports progress 0, 50 and 100 out of 100."""
        report = runtime.session_for(ctx.agent)
        for step in (0, 50, 100):
            if report is not None:
                report("mcp/progress", {"callId": ctx.call_id, "progress": step, "total": 100})
            if step < 100:
                await asyncio.sleep(0.05)
        return "Progress test completed"

    for definition in (
        test_simple_text,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_error_handling,
        test_tool_with_logging,
        test_tool_with_progress,
    ):
        runtime.register(definition)
    return runtime


if __name__ == "__main__":
    asyncio.run(serve_http(build_runtime(), port=int(sys.argv[1]), mode="native"))
