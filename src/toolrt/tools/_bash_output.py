"""A command's output as the model reads it: bounded in memory, head and tail kept, always text.

Why head *and* tail: the head of a build log says what ran, the tail says how it ended (the error,
the summary line); the middle is what a model can most afford to lose, and the note says how much
was lost so it can rerun with a filter (``| grep``, ``| tail``). Memory stays bounded however much a
command prints: only the first and the last few ``limit`` characters' worth of bytes are kept.

Why decoding with replacement: a command may print anything (a binary file, Latin-1, a cut UTF-8
sequence); undecodable bytes become U+FFFD, so the value is always valid UTF-8 text and no lone
surrogate can reach the model (``surrogateescape`` would make one).
"""

from __future__ import annotations

__all__ = ["OutputCapture", "decode_output", "truncation_note"]

_BYTES_PER_CHAR = 4  # the longest UTF-8 sequence: enough bytes to fill `limit` characters


def decode_output(data: bytes) -> str:
    """Bytes as text: UTF-8, every undecodable byte replaced by U+FFFD (never a surrogate)."""
    return data.decode("utf-8", errors="replace")


def truncation_note(total_bytes: int, shown_head: int, shown_tail: int) -> str:
    """The line that stands where output was cut (the model reads it in place)."""
    return (
        f"\n[… output truncated: {total_bytes:,} bytes in total; the first {shown_head:,} and the last "
        f"{shown_tail:,} characters are shown. Filter the output (grep, head, tail) to see the rest …]\n"
    )


class OutputCapture:
    """Collects a stream's bytes, keeping the head and the tail, and renders at most ``limit`` characters.

    >>> capture = OutputCapture(limit=10)
    >>> capture.feed(b"0123456789" * 3)
    >>> text, truncated = capture.text()
    >>> truncated, text.startswith("01234"), text.endswith("56789")
    (True, True, True)
    """

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError(f"the output limit must be at least 2 characters, got {limit}")
        self.limit = limit
        self._keep = limit * _BYTES_PER_CHAR
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        """Take one chunk (an empty chunk is the end of the stream and changes nothing)."""
        self.total_bytes += len(chunk)
        room = self._keep - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > 2 * self._keep:
                # Trim in bulk, not per chunk: one copy per `keep` bytes received.
                del self._tail[: len(self._tail) - self._keep]

    def text(self) -> tuple[str, bool]:
        """The output as text within ``limit`` characters (plus the note), and whether it was cut."""
        dropped = self.total_bytes - len(self._head) - len(self._tail)
        if dropped == 0:
            whole = decode_output(bytes(self._head + self._tail))
            if len(whole) <= self.limit:
                return whole, False
            head_text, tail_text = whole, whole
        else:
            head_text = decode_output(bytes(self._head))
            tail_text = decode_output(bytes(self._tail[-self._keep :]))
        half = self.limit // 2
        head = head_text[:half]
        tail = tail_text[-(self.limit - half) :]
        return head + truncation_note(self.total_bytes, len(head), len(tail)) + tail, True
