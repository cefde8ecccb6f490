"""Where a worker may fetch a live web page from, and how much of it: the operator's rules.

A job names a page by URL (``kind: web_page`` with ``url:``); the worker fetches it
(``activities.sources.web_fetch``). The URL comes from whoever wrote the job spec, so it is
untrusted: left open, it would let a job make the worker read its own cloud metadata
endpoint, a database on localhost or an admin page on the private network (server-side
request forgery). The operator therefore decides, in settings, which domains may be
fetched at all (``PRESSROOM_WEB_ALLOWED_DOMAINS``; empty: none) and which otherwise-refused
networks a fetch may reach (``PRESSROOM_WEB_ALLOWED_NETWORKS``; empty: only public
addresses). SECURITY.md, "Live web pages", states the rules.

This module is the part both sides need: ``pressroom run`` (through the worker's submit
check) and ``store_job_spec`` refuse a spec whose URL the allow-list does not hold, and the
fetch applies every rule again, to every redirect, after resolving the name itself. Pure:
no network here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contracts.errors import WebUrlRefused

#: a page larger than this is refused (``WebLimitExceeded``), counted as it streams
DEFAULT_MAX_BYTES = 5_000_000
#: the whole fetch, redirects included
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_REDIRECTS = 5
SCHEMES = ("http", "https")
#: a DNS name (letters, digits, hyphens, dots; IDNs in their ``xn--`` form) or an IP literal
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?|[0-9a-f:.]{2,45}")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class WebFetchPolicy(BaseModel):
    """The operator's rules for live web pages (``settings.Settings.web_policy``).

    ``allowed_domains``: a host is allowed when it equals one of them or ends with
    ``.`` + one (``example.org`` allows ``docs.example.org``); a leading ``*.`` or ``.``
    is the same. ``allowed_networks``: CIDR blocks a fetch may connect to even though
    they are loopback, private, link-local or otherwise special (tests allow
    ``127.0.0.0/8``); no entry allows them by default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allowed_domains: tuple[str, ...] = ()
    allowed_networks: tuple[str, ...] = ()
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    max_redirects: int = Field(default=DEFAULT_MAX_REDIRECTS, ge=0)

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for raw in value:
            domain = raw.strip().lower().removeprefix("*.").lstrip(".").rstrip(".")
            if not domain or any(c in domain for c in "/:@ \t"):
                raise ValueError(f"{raw!r} is not a domain name (give names like "
                                 "example.org, no scheme, port or path)")
            out.append(domain)
        return tuple(out)

    @field_validator("allowed_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for raw in value:
            try:
                ipaddress.ip_network(raw.strip(), strict=False)
            except ValueError:
                raise ValueError(f"{raw!r} is not a network in CIDR form "
                                 "(e.g. 127.0.0.0/8)") from None
        return tuple(raw.strip() for raw in value)

    def networks(self) -> list[Network]:
        return [ipaddress.ip_network(raw, strict=False) for raw in self.allowed_networks]

    def domain_allowed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(host == d or host.endswith("." + d) for d in self.allowed_domains)


def url_host(url: str) -> str:
    """The host of an http(s) ``url`` (lowercase, no brackets); ``WebUrlRefused`` for
    anything else: another scheme, no host, credentials in it, a malformed port."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a malformed port
    except ValueError:
        raise WebUrlRefused(f"URL {url[:200]!r} is malformed") from None
    del port
    if parts.scheme.lower() not in SCHEMES:
        raise WebUrlRefused(f"URL {url[:200]!r} is not http or https (scheme "
                            f"{parts.scheme[:20]!r}); only http(s) pages are fetched")
    if parts.username is not None or parts.password is not None:
        raise WebUrlRefused(f"URL of host {parts.hostname!r} carries credentials; a live "
                            "web page is fetched without any")
    if not parts.hostname:
        raise WebUrlRefused(f"URL {url[:200]!r} names no host")
    host = parts.hostname.lower()
    if not _HOST.fullmatch(host):
        # never quoted: it is no host name, and it may come from a server's redirect
        raise WebUrlRefused("URL names a host that is neither a DNS name nor an IP address")
    return host


def check_url(url: str, policy: WebFetchPolicy) -> str:
    """``url``'s host if the policy allows fetching it (scheme, no credentials, domain on
    the allow-list); ``WebUrlRefused`` naming the problem otherwise. Addresses are checked
    by the fetch, after it resolves the name."""
    host = url_host(url)
    if not policy.domain_allowed(host):
        listed = ("the worker allows no domains (PRESSROOM_WEB_ALLOWED_DOMAINS is empty)"
                  if not policy.allowed_domains else
                  "it is not on the worker's allow-list (PRESSROOM_WEB_ALLOWED_DOMAINS)")
        raise WebUrlRefused(f"host {host!r} of URL {url[:200]!r} may not be fetched: {listed}")
    return host


def check_urls(urls: Sequence[tuple[str, str]], policy: WebFetchPolicy) -> None:
    """``check_url`` for each ``(what, url)``; the first refusal names ``what``."""
    for what, url in urls:
        try:
            check_url(url, policy)
        except WebUrlRefused as exc:
            raise WebUrlRefused(f"{what}: {exc.message}") from None


def check_job_urls(sources: Sequence[Any], policy: WebFetchPolicy) -> None:
    """Refuse a job (``WebUrlRefused``, one line naming the source, host and rule) if a
    live web page among ``sources`` (``kind: web_page`` without ``path:``) names a URL the
    policy does not allow — at submit, before anything is fetched."""
    check_urls([(f"source {s.name!r}", s.fetched_url()) for s in sources
                if s.fetched_url() is not None], policy)


__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_REDIRECTS", "DEFAULT_TIMEOUT_S", "SCHEMES",
           "WebFetchPolicy", "check_job_urls", "check_url", "check_urls", "url_host"]
