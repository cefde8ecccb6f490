"""The worker's health endpoint: plain HTTP/1.0-style answers on ``PRESSROOM_HEALTH_PORT``
(``worker.py`` starts it; nothing else imports this module).

* ``GET /healthz`` — liveness: the worker process's event loop answers → ``200 ok``.
* ``GET /readyz`` — readiness: ``200 ready`` only while the worker polls — its Temporal
  client connected, the store opened once at start, the ``Worker`` started — and not yet
  stopping; ``503 starting`` before that, ``503 draining`` from SIGTERM/SIGINT on (the pod
  leaves its Service while running activities drain), ``503 not ready`` when the store
  could not be opened at start.

Bounded on purpose: a request head of at most ``MAX_REQUEST_BYTES``, read within
``READ_TIMEOUT_SECONDS``; at most ``MAX_CONNECTIONS`` at once (more are closed unanswered);
one request per connection. Answers carry a status word only — no URL, address, version or
error text. ``HEAD`` is answered like ``GET`` without a body; other methods get 405, other
paths 404, a malformed request 400, an oversized one 431, a slow one 408.

Standard library only (``asyncio.start_server``): it runs on the worker's own loop, so a
``/healthz`` answer shows that loop is not blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

__all__ = ["MAX_REQUEST_BYTES", "HealthServer", "HealthState", "start_health_server"]

MAX_REQUEST_BYTES = 4096
READ_TIMEOUT_SECONDS = 5.0
WRITE_TIMEOUT_SECONDS = 5.0
MAX_CONNECTIONS = 16

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 431: "Request Header Fields Too Large",
            503: "Service Unavailable"}


@dataclass
class HealthState:
    """What ``/readyz`` reports; ``worker.run_worker`` moves it along."""

    started: bool = False     # the Worker is running (polling)
    store_ok: bool = True     # the store opened at start (``False``: it did not)
    draining: bool = False    # SIGTERM/SIGINT arrived: polling stopped

    def readiness(self) -> tuple[int, str]:
        if self.draining:
            return 503, "draining"
        if not self.store_ok:
            return 503, "not ready"
        if not self.started:
            return 503, "starting"
        return 200, "ready"


class HealthServer:
    """The listening endpoint; ``close`` stops it (``start_health_server`` makes one)."""

    def __init__(self, state: HealthState) -> None:
        self.state = state
        self._server: asyncio.base_events.Server | None = None
        self._open = 0

    @property
    def port(self) -> int:
        """The port it listens on (the one asked for, or the system's pick for 0)."""
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port,
                                                  limit=MAX_REQUEST_BYTES)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), WRITE_TIMEOUT_SECONDS)
            self._server = None

    def answer(self, head: bytes) -> tuple[int, str]:
        """The status and word for one request head (request line and headers)."""
        try:
            line = head.split(b"\r\n", 1)[0].decode("ascii")
        except UnicodeDecodeError:
            return 400, "bad request"
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return 400, "bad request"
        method, target, _version = parts
        path = target.split("?", 1)[0]
        if path not in ("/healthz", "/readyz"):
            return 404, "not found"
        if method not in ("GET", "HEAD"):
            return 405, "method not allowed"
        if path == "/healthz":
            return 200, "ok"
        return self.state.readiness()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            writer.close()
            return
        self._open += 1
        try:
            method = b""
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"),
                                              READ_TIMEOUT_SECONDS)
                method = head.split(b" ", 1)[0]
                status, word = self.answer(head)
            except asyncio.LimitOverrunError:
                status, word = 431, "request too large"
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    return  # connected and closed (a TCP probe): nothing to answer
                status, word = 400, "bad request"
            except TimeoutError:
                status, word = 408, "request timeout"
            body = (word + "\n").encode("ascii")
            headers = (f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
                       "Content-Type: text/plain; charset=utf-8\r\n"
                       f"Content-Length: {len(body)}\r\n"
                       "Cache-Control: no-store\r\n"
                       "Connection: close\r\n\r\n").encode("ascii")
            writer.write(headers if method == b"HEAD" else headers + body)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_SECONDS)
        except (ConnectionError, OSError):
            pass
        finally:
            self._open -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), WRITE_TIMEOUT_SECONDS)


async def start_health_server(state: HealthState, host: str, port: int) -> HealthServer:
    """Listen on ``host``:``port`` and answer from ``state``; an ``OSError`` when the port
    cannot be bound."""
    server = HealthServer(state)
    await server.start(host, port)
    return server
