"""Container health check for a Pressroom worker: exit 0 when healthy, 1 (with one line on
stderr naming what failed) otherwise.

With ``PRESSROOM_HEALTH_PORT`` set (the image sets ``0.0.0.0:8081``) it asks the worker's
own health endpoint: ``GET /readyz`` on that port over loopback must answer 200 — the
worker's client connected, its store opened, it is polling and not draining after SIGTERM
(``cli/health.py``; deploy/README.md "Health checks").

Without it (a worker started without the endpoint) it falls back to what the worker needs
to make progress: a TCP connection to the Temporal frontend (``PRESSROOM_TEMPORAL_ADDRESS``,
else ``TEMPORAL_ADDRESS``, else ``localhost:7233``) and, when ``PRESSROOM_DATABASE_URL``
names a PostgreSQL server, a TCP connection to it — which does not prove that the worker
polls. Standard library only, so it runs in the slim image (``HEALTHCHECK``, compose).
"""

from __future__ import annotations

import os
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from urllib.parse import urlsplit

TIMEOUT_SECONDS = 3.0
HEALTH_PORT = "PRESSROOM_HEALTH_PORT"


def split_host_port(address: str, default_port: int) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) into its parts; a missing port is ``default_port``."""
    parts = urlsplit("//" + address)
    return parts.hostname or "localhost", parts.port or default_port


def readyz_url(environ: Mapping[str, str]) -> str | None:
    """The worker's ``/readyz`` as seen from inside its container, or ``None`` when
    ``PRESSROOM_HEALTH_PORT`` is unset. ``PORT`` and ``HOST:PORT`` as the worker reads them;
    a wildcard host (``0.0.0.0``, ``::``) is asked over loopback."""
    raw = (environ.get(HEALTH_PORT) or "").strip()
    if not raw:
        return None
    host, _, port = raw.rpartition(":")
    host = host.strip("[]")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{int(port)}/readyz"


def check_readyz(url: str, timeout: float = TIMEOUT_SECONDS) -> list[str]:
    """One line when ``url`` does not answer 200; empty when it does."""
    # no proxy: the endpoint is this container's own, whatever HTTP_PROXY says
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        return [f"worker health endpoint unreachable: {getattr(exc, 'reason', exc)}"]
    return [] if status == 200 else [f"worker not ready: /readyz answered {status}"]


def targets(environ: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """``(what, host, port)`` for every dependency to check (without the endpoint)."""
    address = (environ.get("PRESSROOM_TEMPORAL_ADDRESS") or environ.get("TEMPORAL_ADDRESS")
               or "localhost:7233")
    found = [("Temporal frontend", *split_host_port(address, 7233))]
    url = environ.get("PRESSROOM_DATABASE_URL") or ""
    if url.startswith("postgresql"):
        parts = urlsplit(url)
        found.append(("store PostgreSQL", parts.hostname or "localhost", parts.port or 5432))
    return found


def check_dependencies(environ: Mapping[str, str],
                       timeout: float = TIMEOUT_SECONDS) -> list[str]:
    """One line per dependency that refused or timed out; empty when all answered."""
    failures = []
    for what, host, port in targets(environ):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                pass
        except OSError as exc:
            failures.append(f"{what} {host}:{port} unreachable: {exc}")
    return failures


def check(environ: Mapping[str, str], timeout: float = TIMEOUT_SECONDS) -> list[str]:
    """``/readyz`` when the endpoint is configured, else the dependencies."""
    url = readyz_url(environ)
    return check_readyz(url, timeout) if url else check_dependencies(environ, timeout)


def main() -> int:
    failures = check(os.environ)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
