"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``, in the pattern providers accept."""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_TOOL_NAME", "TOOL_NAME_PATTERN", "mcp_tool_name"]

TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool-name pattern OpenAI and Anthropic both accept (the stricter of the two, intersected)."""

MAX_TOOL_NAME = 64

_DISALLOWED = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_CHARS = 6


def mcp_tool_name(server: str, tool: str) -> str:
    """The registered name of MCP ``tool`` on ``server``: ``mcp__<server>__<tool>``, always valid.

    Providers reject names outside ``^[a-zA-Z0-9_-]{1,64}$``, and MCP allows almost anything (dots,
    slashes, unicode, 128 characters). A name that needs no change stays readable and predictable;
    one that needed replacing or truncating gets a short hash of the *original* pair, so two tools
    that normalize alike (``a.b`` and ``a-b``, or two long names with one prefix) never collide, and
    the same tool keeps the same name across restarts and machines.

    >>> mcp_tool_name("time", "get_current_time")
    'mcp__time__get_current_time'
    >>> mcp_tool_name("fs", "read.file").startswith("mcp__fs__read_file_")
    True
    """
    raw = f"mcp__{server}__{tool}"
    if TOOL_NAME_PATTERN.match(raw):
        return raw
    cleaned = _DISALLOWED.sub("_", raw)
    # The hash is of the exact original pair (with a separator that cannot occur in a server key),
    # so "a.b" on one server and "a_b" on the same server stay distinct.
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]
    head = cleaned[: MAX_TOOL_NAME - _HASH_CHARS - 1]
    return f"{head}_{digest}"
