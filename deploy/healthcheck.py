"""Container health check for a Pressroom worker: exit 0 when the worker's dependencies
accept connections, 1 (with one line on stderr naming what failed) otherwise.

The worker has no health endpoint of its own in this release, so this checks what a worker
needs to make progress: a TCP connection to the Temporal frontend
(``PRESSROOM_TEMPORAL_ADDRESS``, else ``TEMPORAL_ADDRESS``, else ``localhost:7233``) and, when
``PRESSROOM_DATABASE_URL`` names a PostgreSQL server, a TCP connection to it. It does not
prove that the worker process is polling; see deploy/README.md "Health checks". Standard
library only, so it runs in the slim image (``HEALTHCHECK``, the Kubernetes readiness probe).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from urllib.parse import urlsplit

TIMEOUT_SECONDS = 3.0


def split_host_port(address: str, default_port: int) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) into its parts; a missing port is ``default_port``."""
    parts = urlsplit("//" + address)
    return parts.hostname or "localhost", parts.port or default_port


def targets(environ: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """``(what, host, port)`` for every dependency to check."""
    address = (environ.get("PRESSROOM_TEMPORAL_ADDRESS") or environ.get("TEMPORAL_ADDRESS")
               or "localhost:7233")
    found = [("Temporal frontend", *split_host_port(address, 7233))]
    url = environ.get("PRESSROOM_DATABASE_URL") or ""
    if url.startswith("postgresql"):
        parts = urlsplit(url)
        found.append(("store PostgreSQL", parts.hostname or "localhost", parts.port or 5432))
    return found


def check(environ: Mapping[str, str], timeout: float = TIMEOUT_SECONDS) -> list[str]:
    """One line per dependency that refused or timed out; empty when all answered."""
    failures = []
    for what, host, port in targets(environ):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                pass
        except OSError as exc:
            failures.append(f"{what} {host}:{port} unreachable: {exc}")
    return failures


def main() -> int:
    failures = check(os.environ)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
