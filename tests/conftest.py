"""Fixtures shared by every test area.

The test areas mirror the package (``tests/<area>/`` per subpackage or layer). This directory is on
``sys.path`` (pytest inserts a conftest's folder), so the shared helpers import by name:
``helpers`` (tools, inputs and assertions), ``code_mode_fakes`` (an in-process code runtime) and
``fake_openai_server`` (a local Chat Completions server driven by the real ``openai`` client).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_openai_server import FakeOpenAIServer
from helpers import closing_runtime
from toolrt import ToolRuntime


@pytest.fixture(name="runtime")
def fresh_runtime() -> Iterator[ToolRuntime]:
    """A fresh :class:`ToolRuntime`, closed (every registration undone) after the test."""
    yield from closing_runtime()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A local OpenAI-compatible server that plays scripted replies and records every request."""
    with FakeOpenAIServer() as fake:
        yield fake
