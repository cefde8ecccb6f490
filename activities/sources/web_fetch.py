"""Fetching one live web page under the operator's rules, safe against request forgery.

A job names the URL; the worker makes the request. Anything the worker can reach — its
cloud metadata endpoint, a database bound to localhost, an admin page on the private
network — a job could otherwise read through it (server-side request forgery). So every
fetch, and every redirect it follows, is checked here before a byte is sent
(SECURITY.md, "Live web pages"):

- the URL is http or https, carries no credentials, and its host is on the operator's
  allow-list of domains (``contracts.web_policy.check_url``);
- the worker resolves the name itself (``resolve_addresses``, the one seam a test may
  point elsewhere) and refuses the fetch if *any* address is loopback, private, link-local,
  CGNAT, multicast, unspecified, reserved or a cloud metadata address — an IPv4 address
  inside an IPv6 one (mapped, 6to4, Teredo, NAT64) is judged as that IPv4 address — unless
  a network the operator allowed (``PRESSROOM_WEB_ALLOWED_NETWORKS``) holds it;
- the connection goes to the checked address and no other: the HTTP client's network
  backend is pinned to it (``_PinnedBackend``), so a second resolution by the client (DNS
  rebinding between check and connect) cannot happen, while the request keeps its
  ``Host`` header and TLS its server name and certificate check for the real host;
- a response is limited in size (``max_bytes``, checked against ``Content-Length`` and
  again as it streams), the whole fetch with its redirects in time (``timeout_s``) and
  redirects in number (``max_redirects``).

Every refusal is a ``WebFetchRefused`` subclass (``contracts.errors``) whose message names
the URL, address or limit and the rule — never anything the response held.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore

from contracts.errors import (
    WebAddressRefused,
    WebFetchFailed,
    WebLimitExceeded,
)
from contracts.web_policy import WebFetchPolicy, check_url

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: cloud metadata endpoints (AWS/GCP/Azure/OpenStack, AWS over IPv6, ECS task metadata,
#: Alibaba): refused even where their network would otherwise be reachable
METADATA_ADDRESSES: frozenset[Address] = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200"))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: response headers kept with a revision (the rest is dropped, never stored)
KEPT_HEADERS = ("content-type", "etag", "last-modified", "content-language", "date")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: a redirect's Location as a URL may be written: printable ASCII, no spaces or quotes
_LOCATION = re.compile(r"[!#-&(-~]+")
USER_AGENT = "Pressroom-research-fetch/1 (+SECURITY.md#live-web-pages)"


def resolve_addresses(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order (blocking).

    The one seam between a fetch and the system resolver: a test points a name at an
    address by replacing this function, and nothing else in a fetch resolves names."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[Address] = []
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if addr not in found:
            found.append(addr)
    return found


def tls_context() -> ssl.SSLContext:
    """The TLS settings of every https fetch: the system's trusted roots, certificate and
    host name checked (for the URL's host, though the connection goes to the checked
    address). A test that serves https on loopback replaces this to trust its own CA."""
    return ssl.create_default_context()


def _embedded_v4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr.teredo is not None:
        return addr.teredo[1]
    if addr in _NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def address_problem(addr: Address, policy: WebFetchPolicy) -> str | None:
    """Why the worker may not connect to ``addr`` under ``policy``, or ``None``."""
    if any(addr in net for net in policy.networks() if net.version == addr.version):
        return None
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_v4(addr)
        if inner is not None:
            problem = address_problem(inner, policy)
            return f"it embeds {inner}, which is {problem}" if problem else None
    if addr in METADATA_ADDRESSES:
        return "a cloud metadata address"
    checks = (("loopback", addr.is_loopback), ("unspecified", addr.is_unspecified),
              ("link-local", addr.is_link_local), ("multicast", addr.is_multicast),
              ("CGNAT (shared address space)", addr in _CGNAT),
              ("private", addr.is_private), ("reserved", addr.is_reserved),
              ("not a public address", not addr.is_global))
    for name, hit in checks:
        if hit:
            return name
    return None


@dataclass(frozen=True)
class FetchedPage:
    """One fetched page: the bytes and what is kept about how they came."""

    url: str
    final_url: str
    status: int
    fetched_at: str
    address: str
    headers: dict[str, str]
    body: bytes = field(repr=False)
    redirects: list[str] = field(default_factory=list)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that connects only to the addresses checked for one host."""

    def __init__(self, host: str, addresses: Sequence[Address]) -> None:
        self._host = host
        self._addresses = list(addresses)
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        if host.strip("[]").lower() != self._host:
            raise httpcore.ConnectError(f"connection to {host!r} is not the checked host")
        last: Exception | None = None
        for addr in self._addresses:
            try:
                return await self._inner.connect_tcp(str(addr), port, timeout=timeout,
                                                      local_address=local_address,
                                                      socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                last = exc
        raise httpcore.ConnectError(str(last) if last else "no address to connect to")

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("a web fetch never connects to a local socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _ip_literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def checked_addresses(url: str, policy: WebFetchPolicy) -> tuple[str, list[Address]]:
    """``url``'s host and the addresses a fetch may connect to; ``WebUrlRefused`` or
    ``WebAddressRefused`` naming the problem. An IP literal is judged as given; a name is
    resolved here, once, and refused if any of its addresses is."""
    host = check_url(url, policy)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    literal = _ip_literal(host)
    if literal is not None:
        addresses: list[Address] = [literal]
    else:
        try:
            addresses = await asyncio.to_thread(resolve_addresses, host, port)
        except OSError as exc:
            raise WebFetchFailed(f"host {host!r} does not resolve ({exc})") from None
        if not addresses:
            raise WebFetchFailed(f"host {host!r} resolves to no address")
    for addr in addresses:
        problem = address_problem(addr, policy)
        if problem is not None:
            raise WebAddressRefused(
                f"host {host!r} resolves to {addr}, {problem}: the worker does not connect "
                "there (allow its network with PRESSROOM_WEB_ALLOWED_NETWORKS)"
                if str(addr) != host else
                f"address {addr} is {problem}: the worker does not connect there (allow its "
                "network with PRESSROOM_WEB_ALLOWED_NETWORKS)")
    return host, addresses


def _header_text(value: bytes) -> str:
    text = value.decode("latin-1")
    return "".join(c for c in text if c.isprintable())[:300]


async def _one_hop(url: str, host: str, addresses: Sequence[Address], policy: WebFetchPolicy,
                   remaining: float) -> tuple[int, dict[str, str], bytes]:
    """One request to the checked addresses: status, kept headers (and ``location``),
    body (empty for a redirect)."""
    backend = _PinnedBackend(host, addresses)
    timeouts = {"connect": remaining, "read": remaining, "write": remaining,
                "pool": remaining}
    async with httpcore.AsyncConnectionPool(network_backend=backend, retries=0,
                                            max_connections=1, http1=True, http2=False,
                                            ssl_context=tls_context()) as pool:
        async with pool.stream("GET", url, headers=[
                (b"User-Agent", USER_AGENT.encode()),
                (b"Accept", b"text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"),
                (b"Accept-Encoding", b"identity")],
                extensions={"timeout": timeouts}) as response:
            headers: dict[str, str] = {}
            for raw_name, raw_value in response.headers:
                name = raw_name.decode("latin-1").lower()
                if name in (*KEPT_HEADERS, "location", "content-length", "content-encoding"):
                    headers[name] = _header_text(raw_value)
            status = response.status
            if status in _REDIRECTS and "location" in headers:
                return status, headers, b""
            if status != 200:
                return status, headers, b""
            encoding = headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise WebFetchFailed(f"{url[:200]} answered with Content-Encoding "
                                     f"{encoding[:40]!r} though only identity was accepted")
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > policy.max_bytes:
                raise WebLimitExceeded(f"{url[:200]} is {declared} bytes, over the limit of "
                                       f"{policy.max_bytes} bytes")
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_stream():
                size += len(chunk)
                if size > policy.max_bytes:
                    raise WebLimitExceeded(f"{url[:200]} is over the limit of "
                                           f"{policy.max_bytes} bytes")
                chunks.append(chunk)
            return status, headers, b"".join(chunks)


async def fetch_page(url: str, policy: WebFetchPolicy) -> FetchedPage:
    """Fetch ``url`` under ``policy``, following checked redirects; ``WebFetchRefused`` (a
    subclass naming the rule) for anything the rules refuse or the server fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + policy.timeout_s
    current, redirects = url, list[str]()
    try:
        async with asyncio.timeout(policy.timeout_s):
            while True:
                host, addresses = await checked_addresses(current, policy)
                try:
                    status, headers, body = await _one_hop(
                        current, host, addresses, policy,
                        max(0.001, deadline - loop.time()))
                except (httpcore.TimeoutException, TimeoutError):
                    raise WebLimitExceeded(f"{url[:200]} took longer than the limit of "
                                           f"{policy.timeout_s:g} s") from None
                except httpcore.UnsupportedProtocol:
                    raise WebFetchFailed(f"{current[:200]} uses an unsupported protocol"
                                         ) from None
                except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
                    raise WebFetchFailed(f"{current[:200]} could not be fetched from "
                                         f"{addresses[0]}: {type(exc).__name__}") from None
                if status in _REDIRECTS and "location" in headers:
                    if len(redirects) >= policy.max_redirects:
                        raise WebLimitExceeded(f"{url[:200]} redirects more than the limit "
                                               f"of {policy.max_redirects} times")
                    location = headers["location"]
                    if len(location) > 2000 or not _LOCATION.fullmatch(location):
                        # never quoted: it is the server's text, not a URL
                        raise WebFetchFailed(f"{current[:200]} redirected to a location "
                                             "that is not a plain URL", retryable=False)
                    redirects.append(current)
                    current = urljoin(current, location)
                    continue
                if status != 200:
                    raise WebFetchFailed(f"{current[:200]} answered HTTP {status}",
                                         retryable=status >= 500 or status in (408, 429))
                kept = {k: v for k, v in headers.items() if k in KEPT_HEADERS}
                return FetchedPage(url=url, final_url=current, status=status,
                                   fetched_at=datetime.now(UTC).isoformat(),
                                   address=str(addresses[0]), headers=kept, body=body,
                                   redirects=redirects)
    except TimeoutError:
        raise WebLimitExceeded(f"{url[:200]} took longer than the limit of "
                               f"{policy.timeout_s:g} s") from None


__all__ = ["KEPT_HEADERS", "METADATA_ADDRESSES", "FetchedPage", "address_problem",
           "checked_addresses", "fetch_page", "resolve_addresses"]
