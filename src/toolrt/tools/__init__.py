"""Built-in tools, each confined to one workspace directory.

* :func:`fs_tools` — ``read``, ``write``, ``edit``, ``glob``, ``grep``: every path is walked with
  directory fds from the workspace root, so ``..``, absolute paths, escaping symlinks and a symlink
  swapped in mid-call are refused (the sandbox protects a Code Mode program, not a host-side tool).
* :func:`install_bash` / :class:`BashTools` — ``bash`` with background jobs: whole process groups
  killed on timeout, cancellation and close; commands confined by the sandbox when the host has one.
* :func:`file_tools` — the three small read-only tools the demo started with (``list_files``,
  ``read_file``, ``file_info``), on the same confinement.
"""

from toolrt.tools._bash import BashTools, install_bash
from toolrt.tools._files import OutsideRootError, file_tools
from toolrt.tools._fs_tools import fs_tools

__all__ = ["BashTools", "OutsideRootError", "file_tools", "fs_tools", "install_bash"]
