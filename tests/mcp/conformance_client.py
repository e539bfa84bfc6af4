"""The client executable the MCP conformance suite drives: toolrt's McpConnections, nothing else.

``npx @modelcontextprotocol/conformance client --command "python conformance_client.py" --scenario X``
starts a scenario server and runs this script with the server's URL as the last argument (and the
scenario's name in ``MCP_CONFORMANCE_SCENARIO``). The script does what an agent does: connect,
register the server's tools on a runtime, and call each one with arguments built from its schema.
It exits non-zero if connecting fails; tool failures are results, as they are for a model.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from toolrt import ToolRuntime, content_text
from toolrt.mcp import HttpServer, McpConnections


def sample(schema: Any, name: str = "") -> Any:
    """A plausible value for ``schema``: its default, its first enum entry, or a typed placeholder."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {key: sample(value, key) for key, value in properties.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return {"a": 2, "b": 3}.get(name, 1)
    if kind == "boolean":
        return True
    return "conformance"


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    runtime = ToolRuntime()
    async with McpConnections(runtime, [HttpServer("conformance", url)]) as connections:
        for name in connections.tool_names("conformance"):
            definition = runtime.get(name)
            arguments = sample(dict(definition.parameters)) if definition is not None else {}
            result = await runtime.call(name, arguments)
            outcome = "error" if result.is_error else "ok"
            print(f"[{scenario}] {name}: {outcome}: {content_text(result.content)[:200]}")
    runtime.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
