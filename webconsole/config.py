"""How one console process is set up: where it listens, its secret, how reviewers prove
who they are. Built in ``pressroom web`` (``main``) from ``Settings`` and flags, passed in.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

#: the console's default port (Temporal's UI is 8233)
DEFAULT_PORT = 8780
SECRET_BYTES = 32


class ConsoleConfig(BaseModel):
    """``host`` defaults to loopback: exposing the console is a decision (put it behind a
    TLS-terminating reverse proxy, then set ``secure_cookies``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    secret: bytes = Field(min_length=SECRET_BYTES, repr=False)
    secure_cookies: bool = False
    #: a header a trusted reverse proxy sets to the signed-in reviewer's name (e.g.
    #: ``X-Forwarded-User``); ``None``: local accounts only
    proxy_header: str | None = None
    #: the addresses that header is believed from (the proxy's own), never anyone else
    trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")
    #: how often the jobs page refreshes itself
    refresh_seconds: int = Field(default=5, ge=1, le=3600)


def load_secret(path: Path) -> bytes:
    """The console's cookie-signing secret at ``path``, created (0600) on first use; a
    secret others can read is refused like a reviewer key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_secret(path)
    data = secrets.token_bytes(SECRET_BYTES)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return data


def _read_secret(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if os.fstat(fd).st_mode & 0o077:
            raise PermissionError(f"console secret {path} is readable by others; chmod 600 it")
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    if len(data) < SECRET_BYTES:
        raise ValueError(f"console secret {path} is shorter than {SECRET_BYTES} bytes")
    return data


__all__ = ["DEFAULT_PORT", "ConsoleConfig", "load_secret"]
