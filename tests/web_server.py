"""A real HTTP(S) server on loopback for the live web page tests, counting every request.

``PageServer`` serves what a test puts in ``routes`` (a path to a ``Route``: a page, a
redirect, a slow answer, an oversized one) from a ``ThreadingHTTPServer`` thread bound
to ``127.0.0.1`` with an ephemeral port, and counts requests per path and records each
request's ``Host`` header, so a test can see that a page was fetched once, that a
refused fetch never reached it, and that the request kept its host name.
"""

from __future__ import annotations

import collections
import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {
        "Content-Type": "text/html; charset=utf-8"})
    #: seconds the handler waits before answering (it is released at shutdown)
    delay: float = 0.0
    #: send no Content-Length (the body ends when the connection closes)
    no_length: bool = False


class PageServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.counts: collections.Counter[str] = collections.Counter()
        self.hosts: list[str] = []
        self._release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                server.counts[path] += 1
                server.hosts.append(self.headers.get("Host", ""))
                route = server.routes.get(path, Route(status=404, body=b"not here"))
                if route.delay:
                    server._release.wait(route.delay)
                self.send_response(route.status)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                if not route.no_length:
                    self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                try:
                    self.wfile.write(route.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a limit): nothing more to send

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.scheme = "http"
        if tls is not None:  # https: the listening socket speaks TLS with the test's cert
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def page(self, path: str, html: str, **headers: str) -> None:
        self.routes[path] = Route(body=html.encode("utf-8"), headers={
            "Content-Type": "text/html; charset=utf-8", **headers})

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.routes[path] = Route(status=status, headers={"Location": location})

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def page_server(tls: ssl.SSLContext | None = None) -> Iterator[PageServer]:
    server = PageServer(tls)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def article(title: str, *sections: tuple[str, str], hidden: str | None = None) -> str:
    """A small HTML article with navigation and a footer around it (boilerplate the
    extractor drops) and, optionally, a paragraph its own stylesheet hides."""
    body = "".join(f"<h2>{h}</h2>\n<p>{p}</p>\n" for h, p in sections)
    note = f'<div class="note"><p>{hidden}</p></div>\n' if hidden else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
            "<style>.note { display: none; }</style></head><body>"
            "<nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>"
            f"<article><h1>{title}</h1>\n{body}{note}</article>"
            "<footer>Copyright 2026 Example Corp. All rights reserved.</footer>"
            "</body></html>")
