"""The ``toolrt`` command. ``main`` is its entry point (``[project.scripts]``)."""

from toolrt.cli._main import main

__all__ = ["main"]
