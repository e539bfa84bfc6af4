"""A loopback TCP listener that records every connection it accepts: host-side evidence for the
confined-command and Deno attack tests (the full suite's ``evidence.Listeners`` covers more)."""

from __future__ import annotations

import socket
import threading


class Listener:
    """Accepts on 127.0.0.1 (an ephemeral ``port``) and counts connections in ``accepted``."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
