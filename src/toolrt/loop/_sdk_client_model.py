"""What the SDK-backed chat models share about their HTTP client: who closes it, and ``async with``.

Why it matters: a model built around a caller's preconfigured client must leave that client open
(the caller may share it), while a model that created its own must close it, or every agent run
leaks a connection pool. Both :class:`~toolrt.loop.OpenAIChatModel` and
:class:`~toolrt.loop.AnthropicModel` follow that one rule, so it lives here once.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

__all__ = ["SdkClientModel"]


class _HttpClient(Protocol):
    @property
    def base_url(self) -> object: ...

    async def close(self) -> None: ...


class SdkClientModel:
    """Base of a chat model over an SDK's async client; subclasses set ``model``, ``client`` and
    ``_owns_client`` (``True`` when they created the client)."""

    model: str
    client: _HttpClient
    _owns_client: bool

    async def aclose(self) -> None:
        """Close the HTTP client, if this model created it."""
        if self._owns_client:
            await self.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={str(self.client.base_url)!r})"
