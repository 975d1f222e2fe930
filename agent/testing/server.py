"""The simulator's HTTP plumbing: a loopback server that hands each request to one callable.

Kept apart from `MessagesSimulator` so the API's rules read without socket code.
Each answer leaves in a single write on a TCP_NODELAY socket (status line, headers
and body together): written in pieces, a small answer can wait on Nagle's algorithm
and the peer's delayed ACK. Every connection is closed after one answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.testing.answers import Reply

__all__ = ["SERVER_NAME", "Handle", "LoopbackServer"]

SERVER_NAME = "agent-from-scratch-simulator"
Handle = Callable[[str, str, Mapping[str, str], bytes], Reply]
"""`handle(method, path, headers, raw_body) -> Reply`."""


class LoopbackServer(ThreadingHTTPServer):
    """A threaded HTTP server answering every request with `handle`; `start()` / `stop()`."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handle: Handle) -> None:
        super().__init__(address, _Handler)
        self.handle = handle
        self._thread: threading.Thread | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (a timeout test) is not the simulator's error

    def start(self) -> None:
        # a short poll keeps stop() quick: shutdown waits for the loop's next poll
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.01}, name="messages-simulator", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY: small answers leave at once

    def version_string(self) -> str:
        return SERVER_NAME

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests assert on what the simulator kept, not on access logs

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        self._send(self.server.handle("POST", self.path, dict(self.headers.items()), raw))

    def do_GET(self) -> None:
        self._send(self.server.handle("GET", self.path, dict(self.headers.items()), b""))

    def _send(self, reply: Reply) -> None:
        """Status line, headers and body in one write."""
        self.close_connection = True
        headers = {"content-type": "application/json", **reply.headers}
        head = [
            f"{self.protocol_version} {reply.status} {self.responses.get(reply.status, ('',))[0]}",
            f"server: {self.version_string()}",
            f"date: {self.date_time_string()}",
            *(f"{name}: {value}" for name, value in headers.items()),
            f"content-length: {len(reply.body)}",
            "connection: close",
        ]
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + reply.body)
