"""A small MCP server (the SDK's MCPServer) whose tools exercise what the client must survive.

Run as ``python toolbox.py [--log PATH] [--http PORT] [--legacy]``. ``--log`` appends one JSON line
per event the tests check from outside the process: a call started, a call cancelled, a call
finished. Every tool is real server code, answered over real stdio or streamable HTTP.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--log", default=None)
parser.add_argument("--http", type=int, default=None)
parser.add_argument("--exotic", action="store_true", help="also serve tools with exotic names")
parser.add_argument("--die-at-start", action="store_true")
parser.add_argument("--garbage", action="store_true", help="write garbage on stdout instead of JSON-RPC")
options = parser.parse_args()

if options.die_at_start:
    sys.stderr.write("toolbox: cannot open the database /nonexistent/db.sqlite\n")
    sys.exit(3)
if options.garbage:
    sys.stdout.write("this is not JSON-RPC\n{not json either\n")
    sys.stdout.flush()
    time.sleep(30)
    sys.exit(0)


def log(event: str, **fields: Any) -> None:
    if options.log:
        with open(options.log, "a", encoding="utf-8") as file:
            file.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n")


server = MCPServer("toolbox")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text unchanged."""
    log("call", tool="echo", text=text)
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers (structured output)."""
    return {"sum": a + b}


@server.tool()
def record(note: str) -> str:
    """A call with an effect: appends the note to the log (never to be replayed)."""
    log("record", note=note)
    return f"recorded {note}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """A read-only call; dies once on the key 'die-once' (a restart may replay it)."""
    log("lookup", key=key)
    marker = f"{options.log}.died" if options.log else None
    if key == "die-once" and marker and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(9)
    return f"value of {key}"


@server.tool()
async def sleep(seconds: float, ctx: Context) -> str:
    """Sleep, reporting progress each 0.1 s; logs a cancellation if one arrives."""
    log("sleep-start", seconds=seconds)
    try:
        steps = max(1, int(seconds * 10))
        for step in range(steps):
            await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(seconds / steps)
    except anyio.get_cancelled_exc_class():
        log("cancelled", tool="sleep")
        raise
    log("sleep-end")
    return "slept"


@server.tool()
def crash(note: str) -> str:
    """Exit the whole server in the middle of the call."""
    log("crash", note=note)
    os._exit(7)


@server.tool()
def hang(note: str) -> str:
    """Never answer (blocks its worker forever)."""
    log("hang", note=note)
    while True:
        time.sleep(1)


@server.tool()
def big(chars: int) -> str:
    """Return ``chars`` characters of text."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    return (line * (chars // len(line) + 1))[:chars]


@server.tool()
def fail(message: str) -> str:
    """Fail with isError and the server's own text."""
    raise ToolError(message)


@server.tool()
def pick(choice: Any, limit: int | None = None) -> str:
    """Accept any JSON as 'choice' (anyOf/nullable in the schema); return what arrived."""
    return json.dumps({"choice": choice, "limit": limit})


@server.tool()
def trace(ctx: Context) -> str:
    """Return the traceparent this call carried in _meta (or 'none')."""
    meta = ctx.request_context.meta
    value = (
        None
        if meta is None
        else (meta.get("traceparent") if isinstance(meta, dict) else getattr(meta, "traceparent", None))
    )
    return value or "none"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool named ``name`` and announce the change."""

    def extra(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(extra, name=name, description=f"added at run time ({name})")
    await ctx.notify_tools_changed()
    return f"added {name}"


if options.exotic:

    def _unicode(text: str) -> str:
        return f"unicode {text}"

    def _long(text: str) -> str:
        return f"long {text}"

    def _dotted(text: str) -> str:
        return f"dotted {text}"

    def _dashed(text: str) -> str:
        return f"dashed {text}"

    server.add_tool(_unicode, name="résumé.überprüfen", description="a unicode, dotted name")
    server.add_tool(_long, name="t" * 100, description="a 100-character name")
    server.add_tool(_dotted, name="files.read", description="a dotted name")
    server.add_tool(_dashed, name="files_read", description="normalizes like files.read")

if options.http is not None:
    server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)
else:
    server.run()
