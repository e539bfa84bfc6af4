"""Fixtures for ``tokens.py``: deterministic synthetic data and the three tool sets it measures.

Nothing here is imported by the test suite. Every tool is a real :class:`toolrt.ToolDefinition`
(raw JSON-Schema parameters, a typed output schema, a ``render`` for the model-facing text), so the
native transcript shows what toolrt's pipeline renders and Code Mode programs get the canonical
values through toolrt's real ``run_code`` bridge.

* **file6** (:mod:`_fixtures.file_tools`) — ``read``, ``write``, ``edit``, ``glob``, ``grep``, ``bash`` over a
  synthetic monorepo (:mod:`_fixtures.monorepo`) written to ``<tmp>/toolrt-bench/acme``.
* **mcp40** (:mod:`_fixtures.mcp_tools`) — 40 GitHub / Jira / Slack / shop / CRM tools over the synthetic
  data of :mod:`_fixtures.dataset` (200 orders, 60 customers, 20 pull requests with files and check runs).
* **mcp150** — mcp40 plus the 110 tools of :mod:`_fixtures.generated_tools`.

The tasks that use them are in ``_tasks.py``.
"""

from __future__ import annotations

from _fixtures.dataset import Fixture
from _fixtures.file_tools import file_tools
from _fixtures.generated_tools import generated_tools
from _fixtures.mcp_tools import mcp_tools
from _fixtures.monorepo import Workspace
from toolrt import ToolDefinition


def build_tool_set(name: str, fixture: Fixture, workspace: Workspace | None) -> list[ToolDefinition]:
    """The tool set called ``name`` (``file6``, ``mcp40`` or ``mcp150``); file6 needs the workspace."""
    if name == "file6":
        assert workspace is not None
        return file_tools(workspace)
    if name == "mcp40":
        return mcp_tools(fixture)
    if name == "mcp150":
        return [*mcp_tools(fixture), *generated_tools()]
    raise ValueError(name)
