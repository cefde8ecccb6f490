"""How every Pressroom client reaches Temporal: one place that builds the connection.

``pressroom`` commands (``cli.commands.connect``), the worker (``worker.connect``),
the review console (``webconsole.server``) and ``pressroom doctor`` all call
``resolve`` / ``connect`` here, so a cluster reached by one is reached by all — a plain
dev server, a self-hosted cluster with mutual TLS, or Temporal Cloud with an API key.

The precedence between the flags, ``PRESSROOM_TEMPORAL_*``, Temporal's own ``TEMPORAL_*``
variables and the TOML profile is written down once, in deploy/README.md ("Connecting to
Temporal"); ``resolve`` implements it (tests/workflows/test_connection.py holds it to it).
In short: a flag, then ``PRESSROOM_TEMPORAL_ADDRESS`` / ``_NAMESPACE``, then
``TEMPORAL_*``, then the profile, then the defaults; the worker's ``--tls-*`` flags replace
the TLS files; an API key turns TLS on, ``TEMPORAL_TLS=false`` turns it off.

"The profile" is ``[profile.<TEMPORAL_PROFILE or default>]`` of Temporal's TOML
configuration file (``TEMPORAL_CONFIG_FILE``, else ``~/.config/temporalio/temporal.toml``
when present), loaded by ``temporalio.envconfig`` from the ``TEMPORAL_*`` variables
``Settings.from_env`` kept (``Settings.temporal_env``) — never from the process environment
of the moment.

Every configuration mistake is a ``ConnectionConfigError`` (a ``JobError``: one line on
stderr, never the API key) raised before any network traffic: a missing TLS file, a
certificate without its key, an API key that cannot be sent as a header, a profile or
configuration file that is not there. A server that cannot be reached in time is a
``TemporalUnavailable`` naming the address and namespace.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.envconfig import ClientConfigProfile, ClientConfigTLS, DataSource
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from client.errors import TemporalUnavailable
from contracts.errors import JobError
from settings import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    ENV_TEMPORAL_ADDRESS,
    ENV_TEMPORAL_API_KEY,
    ENV_TEMPORAL_CONFIG_FILE,
    ENV_TEMPORAL_NAMESPACE,
    ENV_TEMPORAL_PROFILE,
    TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE,
    Settings,
)
from workflows.temporal_config import DATA_CONVERTER

__all__ = ["CONNECT_TIMEOUT", "ConnectionConfigError", "NamespaceNotFound", "Target",
           "TlsFlags", "connect", "connect_target", "resolve", "where"]

#: Seconds a client waits for the server to answer before ``TemporalUnavailable``.
CONNECT_TIMEOUT = 15.0


class ConnectionConfigError(JobError):
    """The connection options cannot be used; the message names the variable, flag or file
    (never a secret)."""


class NamespaceNotFound(TemporalUnavailable):
    """The server answered but has no such namespace; names where the namespace came from."""


@dataclass(frozen=True)
class TlsFlags:
    """``pressroom worker``'s ``--tls-cert`` / ``--tls-key`` / ``--tls-ca`` (file paths)."""

    cert: str | None = None
    key: str | None = None
    ca: str | None = None

    def __bool__(self) -> bool:
        return bool(self.cert or self.key or self.ca)


@dataclass(frozen=True)
class Target:
    """Where and how to connect, with where each choice came from (for messages and
    ``pressroom doctor``). ``kwargs`` are ``Client.connect``'s keyword arguments."""

    address: str
    namespace: str
    address_from: str
    namespace_from: str
    #: "off", "on" (system roots) or "mTLS"; plus " + API key" when one is sent.
    security: str
    kwargs: dict[str, Any] = field(repr=False)

    def describe(self) -> str:
        return (f"{self.address} namespace {self.namespace!r} ({self.security}; address "
                f"from {self.address_from}, namespace from {self.namespace_from})")


def _profile(settings: Settings) -> ClientConfigProfile:
    env = settings.temporal_env
    config_file = env.get(ENV_TEMPORAL_CONFIG_FILE)
    if config_file and not Path(config_file).expanduser().is_file():
        raise ConnectionConfigError(f"{ENV_TEMPORAL_CONFIG_FILE}: no such file: {config_file}")
    try:
        return ClientConfigProfile.load(
            profile=env.get(ENV_TEMPORAL_PROFILE),
            config_source=Path(config_file).expanduser() if config_file else None,
            override_env_vars=env)
    except Exception as exc:  # temporal_sdk_bridge.ConfigError: bad TOML, unknown profile
        where = config_file or "the Temporal configuration file"
        raise ConnectionConfigError(
            f"Temporal client configuration ({where}, profile "
            f"{env.get(ENV_TEMPORAL_PROFILE) or 'default'!r}): "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        ) from None


def _check_api_key(key: str, source: str) -> None:
    """A key must travel as an HTTP/2 header value: visible ASCII, no spaces. The message
    says where the bad character is, never the key."""
    for i, char in enumerate(key):
        if not ("!" <= char <= "~"):
            what = "whitespace" if char.isspace() else "a non-ASCII or control character"
            raise ConnectionConfigError(
                f"{source}: not a usable API key ({what} at position {i + 1} of {len(key)}; "
                "an API key is printable ASCII without spaces — check for a pasted newline "
                "or quote)")


def _read(source: DataSource | None, what: str) -> bytes | None:
    if source is None:
        return None
    if isinstance(source, Path):
        try:
            return source.expanduser().read_bytes()
        except OSError as exc:
            raise ConnectionConfigError(
                f"cannot read TLS file {source} ({what}): {exc.strerror or exc}") from None
    return source.encode() if isinstance(source, str) else source


def _tls(profile_tls: ClientConfigTLS | None, flags: TlsFlags,
         api_key: bool) -> tuple[bool | TLSConfig, str]:
    if bool(flags.cert) != bool(flags.key):
        raise ConnectionConfigError(
            "--tls-cert and --tls-key go together: give both or neither")
    tls = profile_tls or ClientConfigTLS()
    if flags:
        tls = ClientConfigTLS(disabled=False, server_name=tls.server_name,
                              server_root_ca_cert=Path(flags.ca) if flags.ca else None,
                              client_cert=Path(flags.cert) if flags.cert else None,
                              client_private_key=Path(flags.key) if flags.key else None)
    if tls.disabled is True or (profile_tls is None and not flags and not api_key):
        return False, "TLS off"
    if (tls.client_cert is None) != (tls.client_private_key is None):
        raise ConnectionConfigError(
            "a TLS client certificate and its key go together: set both "
            "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or the "
            "profile's tls.client_cert_path and tls.client_key_path), or neither")
    config = TLSConfig(domain=tls.server_name,
                       server_root_ca_cert=_read(tls.server_root_ca_cert, "server CA"),
                       client_cert=_read(tls.client_cert, "client certificate"),
                       client_private_key=_read(tls.client_private_key, "client key"))
    return config, "mTLS" if tls.client_cert is not None else "TLS"


def resolve(settings: Settings, *, address: str | None = None, namespace: str | None = None,
            tls: TlsFlags | None = None) -> Target:
    """The connection ``settings`` and the flags (``address``, ``namespace``, ``tls``) name,
    by the precedence in this module's docstring; ``ConnectionConfigError`` on a mistake.
    Reads the TLS files (not the network)."""
    env = settings.temporal_env
    profile = _profile(settings)
    profile_name = env.get(ENV_TEMPORAL_PROFILE) or "default"
    in_profile = (f"profile {profile_name!r} of "
                  f"{env.get(ENV_TEMPORAL_CONFIG_FILE) or 'temporal.toml'}")
    explicit = settings.model_fields_set

    def pick(flag: str | None, flag_name: str, field_name: str, ours: str, theirs: str,
             from_profile: str | None, default: str) -> tuple[str, str]:
        if flag:
            return flag, flag_name
        if field_name in explicit:
            return str(getattr(settings, field_name)), ours
        if env.get(theirs):
            return env[theirs], theirs
        if from_profile:
            return from_profile, in_profile
        return default, "the default"

    addr, addr_from = pick(address, "--address", "temporal_address", TEMPORAL_ADDRESS,
                           ENV_TEMPORAL_ADDRESS, profile.address, DEFAULT_ADDRESS)
    ns, ns_from = pick(namespace, "--namespace", "temporal_namespace", TEMPORAL_NAMESPACE,
                       ENV_TEMPORAL_NAMESPACE, profile.namespace, DEFAULT_NAMESPACE)
    kwargs: dict[str, Any] = {"namespace": ns}
    api_key = profile.api_key
    if api_key:
        _check_api_key(api_key, ENV_TEMPORAL_API_KEY if env.get(ENV_TEMPORAL_API_KEY)
                       else f"api_key in {in_profile}")
        kwargs["api_key"] = api_key
    tls_config, security = _tls(profile.tls, tls or TlsFlags(), bool(api_key))
    kwargs["tls"] = tls_config
    if profile.grpc_meta:
        kwargs["rpc_metadata"] = dict(profile.grpc_meta)
    if api_key:
        security += " + API key"
    return Target(address=addr, namespace=ns, address_from=addr_from, namespace_from=ns_from,
                  security=security, kwargs=kwargs)


def where(settings: Settings, *, address: str | None = None,
          namespace: str | None = None) -> str:
    """``HOST:PORT namespace 'NS' (TLS mode)`` for a banner; a configuration mistake is
    not raised here (``connect`` says it, as one line), the banner then names the address
    only."""
    try:
        target = resolve(settings, address=address, namespace=namespace)
    except JobError:
        return address or settings.temporal_address
    return f"{target.address} namespace {target.namespace!r} ({target.security})"


async def connect(settings: Settings, *, address: str | None = None,
                  namespace: str | None = None, tls: TlsFlags | None = None,
                  timeout: float = CONNECT_TIMEOUT) -> Client:
    """A client with Pressroom's data converter on the target ``resolve`` picks, its
    namespace checked; ``TemporalUnavailable`` when the server does not answer within
    ``timeout`` seconds, refuses the credentials or has no such namespace."""
    target = resolve(settings, address=address, namespace=namespace, tls=tls)
    return await connect_target(target, timeout=timeout)


async def connect_target(target: Target, *, timeout: float = CONNECT_TIMEOUT,
                         check_namespace: bool = True) -> Client:
    """``Client.connect`` on ``target`` within ``timeout`` seconds. ``check_namespace``:
    also ask the server for the namespace (one call), so a wrong one is said now rather
    than as "no job" later; a client not allowed to describe it goes on."""
    try:
        client = await asyncio.wait_for(
            Client.connect(target.address, data_converter=DATA_CONVERTER, **target.kwargs),
            timeout=timeout)
    except Exception as exc:
        reason = "no answer in time" if isinstance(exc, TimeoutError) else _reason(exc)
        raise TemporalUnavailable(
            f"cannot reach Temporal at {target.address} (namespace {target.namespace!r}, "
            f"{target.security}): {reason}; start one with `pressroom dev`, or check "
            "`pressroom doctor`") from None
    if check_namespace:
        try:
            await asyncio.wait_for(client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=target.namespace)), timeout=timeout)
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise NamespaceNotFound(
                    f"namespace {target.namespace!r} does not exist on {target.address} "
                    f"(namespace from {target.namespace_from})") from None
            if exc.status == RPCStatusCode.UNAUTHENTICATED:
                raise TemporalUnavailable(
                    f"Temporal at {target.address} refused the credentials "
                    f"({target.security}): {_first_line(exc)}") from None
        except TimeoutError:
            raise TemporalUnavailable(
                f"Temporal at {target.address} did not answer in time") from None
    return client


#: What the SDK's long transport errors come down to, as said to a user.
_KNOWN_REASONS = (("Connection refused", "connection refused"),
                  ("dns error", "the host name does not resolve"),
                  ("invalid peer certificate", "the server's certificate is not trusted"),
                  ("UnknownIssuer", "the server's certificate is not trusted"),
                  ("certificate required", "the server requires a client certificate"),
                  ("InvalidContentType", "the server does not speak TLS"),
                  ("CorruptMessage", "the server does not speak TLS"),
                  ("Unauthenticated", "the server refused the credentials"),
                  ("timed out", "no answer in time"))


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    for needle, said in _KNOWN_REASONS:
        if needle.lower() in text.lower():
            return said
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__
