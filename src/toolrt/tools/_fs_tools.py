"""``fs_tools``: the reference file tools (``read``, ``write``, ``edit``, ``glob``, ``grep``) over one root.

Tools run on the host, outside any Code Mode sandbox, so they must confine their own arguments: every
path goes through one :class:`~toolrt.tools._workspace.Workspace`, whose fd-based walk refuses
``..``, absolute paths and symlinks that leave the root, also when one is swapped in mid-call.

>>> import tempfile
>>> from toolrt import ToolRuntime
>>> runtime = ToolRuntime()
>>> for definition in fs_tools(tempfile.mkdtemp()):
...     _ = runtime.register(definition)
>>> [schema["name"] for schema in runtime.schemas()]
['read', 'write', 'edit', 'glob', 'grep']
"""

from __future__ import annotations

import os

from toolrt._tool_definition import ToolDefinition
from toolrt.tools._fs_read import read_tool
from toolrt.tools._fs_search import glob_tool, grep_tool
from toolrt.tools._fs_write import edit_tool, write_tool
from toolrt.tools._workspace import Workspace

__all__ = ["fs_tools"]


def fs_tools(
    workspace: str | os.PathLike[str], *, read_only: bool = False, use_ripgrep: bool | None = None
) -> list[ToolDefinition]:
    """The file tools confined to ``workspace``: ``read``, ``write``, ``edit``, ``glob``, ``grep``.

    ``read_only=True`` leaves out ``write`` and ``edit``. ``grep`` uses ripgrep when ``rg`` is on
    PATH (``use_ripgrep=False``: never), with the same results as its pure-Python scan.
    ``read``, ``glob`` and ``grep`` are concurrency-safe; ``write`` and ``edit`` are exclusive.
    """
    root = Workspace(workspace)
    reading = [read_tool(root), glob_tool(root), grep_tool(root, use_ripgrep=use_ripgrep)]
    if read_only:
        return reading
    return [reading[0], write_tool(root), edit_tool(root), *reading[1:]]
