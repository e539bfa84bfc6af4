"""Built-in tools. :func:`file_tools` gives three read-only, root-confined file tools."""

from toolrt.tools._files import OutsideRootError, file_tools

__all__ = ["OutsideRootError", "file_tools"]
