"""Pressroom's settings: every ``PRESSROOM_*`` variable the product reads, parsed in one place,
and Temporal's own ``TEMPORAL_*`` client variables kept as read (``temporal_env``; only
``client.connection`` interprets them, through ``temporalio.envconfig``).

``Settings.from_env(os.environ)`` runs once, in the entry points (``pressroom.py``'s and
``worker.py``'s ``main``), and the frozen result is passed down; nothing below them reads
these variables again. A job's source locations may hold ``${PRESSROOM_HOME}`` /
``${PRESSROOM_FIXTURES}`` placeholders: the worker expands them on the machine that reads
the source, from ``Settings.locations`` handed to its runtime (``worker.build_runtime``)
and on to every acquisition — never from the environment of the moment.

Every path a job names is used only inside the operator's roots: sources, the workspace
and a policy file inside the *source roots*, the destination inside the *publish roots*
(``PRESSROOM_SOURCE_ROOTS`` / ``PRESSROOM_PUBLISH_ROOTS``, or the repeatable
``--source-root`` / ``--publish-root`` flags, which replace the variable). Pressroom's own
folders are always roots (``source_root_paths`` / ``publish_root_paths``); ``pressroom dev``
/ ``demo`` add the bundled ``examples/``. They are a worker's: ``pressroom run`` asks a worker
on the job's task queue to check a spec with them (``contracts.path_check``) and adds no
roots of its own. ``contracts.path_safety`` enforces them.

An operator may bind tenants to their own roots (``PRESSROOM_TENANT_SOURCE_ROOTS`` /
``PRESSROOM_TENANT_PUBLISH_ROOTS``, or the repeatable ``--tenant-source-root`` /
``--tenant-publish-root`` flags: ``TENANT=DIR[:DIR...]``). Once any tenant is bound, a job
reads and publishes only inside its own tenant's roots, which replace the roots above for
it, and a job of a tenant bound to none is refused (SECURITY.md, "No read outside the
roots"). With no binding, every job shares the roots above, as before.

This module imports nothing from Pressroom, so every layer may import it without a cycle.

A bad value is a ``SettingsError``: one line naming the variable. ``PRESSROOM_STORE_URL``
is the old name of ``PRESSROOM_DATABASE_URL``; it is still read for one release, with a
``DeprecationWarning``.

Test and benchmark hooks are not settings and are read where they are used:
``PRESSROOM_TEST_PAUSE_AT`` / ``PRESSROOM_TEST_PAUSE_DIR`` (``activities.runtime``, crash
and fault tests), ``PRESSROOM_FAULTS`` (``tests/faults``), ``PRESSROOM_TEST_POSTGRES_URL``
and ``PRESSROOM_CI`` (``tests/``),
``PRESSROOM_BENCH_POSTGRES_URL`` (``bench/store.py``), ``PRESSROOM_UPDATE_GOLDEN``
(``tests/context``) and ``PRESSROOM_FUZZ`` (``tests/fuzz``); tests/README.md lists them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DB_FILENAME",
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "DEFAULT_WORKER_DRAIN_SECONDS",
    "DEFAULT_WORKER_GRACE_SECONDS",
    "DEPRECATED_NAMES",
    "VARIABLES",
    "Settings",
    "SettingsError",
    "Variable",
    "fixtures_from_env",
    "home_from_env",
    "load",
    "parse_health_address",
    "parse_helper_count",
    "parse_port",
]

HOME = "PRESSROOM_HOME"
DATABASE_URL = "PRESSROOM_DATABASE_URL"
STORE_URL = "PRESSROOM_STORE_URL"  # deprecated name of PRESSROOM_DATABASE_URL
FIXTURES = "PRESSROOM_FIXTURES"
SOURCE_ROOTS = "PRESSROOM_SOURCE_ROOTS"
PUBLISH_ROOTS = "PRESSROOM_PUBLISH_ROOTS"
TEMPORAL_ADDRESS = "PRESSROOM_TEMPORAL_ADDRESS"
TEMPORAL_NAMESPACE = "PRESSROOM_TEMPORAL_NAMESPACE"
TASK_QUEUE = "PRESSROOM_TASK_QUEUE"
HELPER_PROCESSES = "PRESSROOM_HELPER_PROCESSES"
WORKER_GRACE_SECONDS = "PRESSROOM_WORKER_GRACE_SECONDS"
WORKER_DRAIN_SECONDS = "PRESSROOM_WORKER_DRAIN_SECONDS"
REVIEWER = "PRESSROOM_REVIEWER"
REVIEWER_KEY = "PRESSROOM_REVIEWER_KEY"
ATTESTATION_KEYS = "PRESSROOM_ATTESTATION_KEYS"
TENANT_SOURCE_ROOTS = "PRESSROOM_TENANT_SOURCE_ROOTS"
TENANT_PUBLISH_ROOTS = "PRESSROOM_TENANT_PUBLISH_ROOTS"
REGISTERED_REVIEWERS_ONLY = "PRESSROOM_REGISTERED_REVIEWERS_ONLY"
DEBUG = "PRESSROOM_DEBUG"
#: Temporal's own client variables (``temporalio.envconfig``): kept as read, in
#: ``Settings.temporal_env``, and turned into connection options by ``client.connection``.
TEMPORAL_PREFIX = "TEMPORAL_"
ENV_TEMPORAL_ADDRESS = "TEMPORAL_ADDRESS"
ENV_TEMPORAL_NAMESPACE = "TEMPORAL_NAMESPACE"
ENV_TEMPORAL_API_KEY = "TEMPORAL_API_KEY"
ENV_TEMPORAL_TLS = "TEMPORAL_TLS"
ENV_TEMPORAL_TLS_CLIENT_CERT = "TEMPORAL_TLS_CLIENT_CERT_PATH"
ENV_TEMPORAL_TLS_CLIENT_KEY = "TEMPORAL_TLS_CLIENT_KEY_PATH"
ENV_TEMPORAL_TLS_SERVER_CA = "TEMPORAL_TLS_SERVER_CA_CERT_PATH"
ENV_TEMPORAL_TLS_SERVER_NAME = "TEMPORAL_TLS_SERVER_NAME"
ENV_TEMPORAL_PROFILE = "TEMPORAL_PROFILE"
ENV_TEMPORAL_CONFIG_FILE = "TEMPORAL_CONFIG_FILE"


DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"
DEFAULT_TASK_QUEUE = "pressroom"
DEFAULT_WORKER_GRACE_SECONDS = 10.0
#: A stopping worker's drain: fits in the 30 s a service manager waits (deploy/) with room
#: for closing its helper processes.
DEFAULT_WORKER_DRAIN_SECONDS = 20.0
#: The SQLite artifact store's file under the home directory.
DB_FILENAME = "pressroom.db"

# Observability (docs/architecture.md#observability): the worker reads these four.
METRICS_PORT = "PRESSROOM_METRICS_PORT"
HEALTH_PORT = "PRESSROOM_HEALTH_PORT"
#: The health endpoint's interface when its value is a bare port: loopback, so a worker on
#: a laptop is not reachable from the network; containers give ``0.0.0.0:PORT``.
DEFAULT_HEALTH_HOST = "127.0.0.1"
TRACING = "PRESSROOM_TRACING"
LOG_FORMAT = "PRESSROOM_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
PRICES = "PRESSROOM_PRICES"
MODEL_ENDPOINTS = "PRESSROOM_MODEL_ENDPOINTS"
WEB_ALLOWED_DOMAINS = "PRESSROOM_WEB_ALLOWED_DOMAINS"
WEB_ALLOWED_NETWORKS = "PRESSROOM_WEB_ALLOWED_NETWORKS"
MCP_SERVERS = "PRESSROOM_MCP_SERVERS"

#: Old name -> current name; the old one is still read (with a warning) for one release.
DEPRECATED_NAMES: dict[str, str] = {STORE_URL: DATABASE_URL}


@dataclass(frozen=True)
class Variable:
    """One environment variable: the ``Settings`` field it sets, its default, its meaning."""

    name: str
    field: str
    default: str
    meaning: str


#: Every variable ``Settings.from_env`` reads (docs/configuration.md#environment-variables
#: lists them).
VARIABLES: tuple[Variable, ...] = (
    Variable(HOME, "home", "`~/.pressroom`",
             "Pressroom's directory: the SQLite artifact store, the Temporal dev server's "
             "database, fixtures, the git cache, the demo's published articles"),
    Variable(DATABASE_URL, "database_url", "SQLite file `$PRESSROOM_HOME/pressroom.db`",
             "artifact store URL (`sqlite+aiosqlite:///path` or "
             "`postgresql+asyncpg://user@host/db`; run `pressroom db upgrade` on a server "
             "database first); `--url` / `--store-url` override it. Old name "
             "`PRESSROOM_STORE_URL`: still read, deprecated"),
    Variable(FIXTURES, "fixtures", "`$PRESSROOM_HOME/fixtures`",
             "what `${PRESSROOM_FIXTURES}` in a job's source locations stands for (the "
             "example's fixture repositories)"),
    Variable(SOURCE_ROOTS, "source_roots",
             "none: only `$PRESSROOM_HOME` and the fixtures folder",
             "folders (absolute, separated by `:`) a job may read from: document and web "
             "page paths, local git repositories, the workspace, a policy file. "
             "`$PRESSROOM_HOME` and the fixtures folder are always included, `pressroom dev` "
             "/ `demo` add the bundled `examples/`; `--source-root` (repeatable) overrides "
             "the variable. They are a worker's: `pressroom run` asks one to check the job"),
    Variable(PUBLISH_ROOTS, "publish_roots", "none: only `$PRESSROOM_HOME`",
             "folders (absolute, separated by `:`) a job's destination must lie inside; "
             "`$PRESSROOM_HOME` is always included, `pressroom dev` / `demo` add the bundled "
             "`examples/`; `--publish-root` (repeatable) overrides the variable"),
    Variable(TENANT_SOURCE_ROOTS, "tenant_source_roots", "unset: every job shares the roots",
             "tenants bound to their own source roots: `TENANT=DIR[:DIR...]` entries "
             "separated by `;`. Once any tenant is bound (here or in "
             "`PRESSROOM_TENANT_PUBLISH_ROOTS`), a job reads only inside its tenant's roots, "
             "which replace the source roots above for it, and a job of an unbound tenant "
             "is refused; `--tenant-source-root TENANT=DIR` (repeatable) overrides it"),
    Variable(TENANT_PUBLISH_ROOTS, "tenant_publish_roots", "unset: every job shares the roots",
             "tenants bound to their own publish roots, in the same form: a bound job's "
             "destination must lie inside its tenant's; `--tenant-publish-root "
             "TENANT=DIR` (repeatable) overrides it"),
    Variable(REGISTERED_REVIEWERS_ONLY, "registered_reviewers_only", "off (on in `deploy/`)",
             "`on`: the worker accepts only reviewer and operator keys the operator's "
             "registry (`$PRESSROOM_HOME/reviewers`) holds for their names — a job spec "
             "pinning any other key is refused at start, and a decision signed with one is "
             "never published; `--registered-reviewers-only` turns it on"),
    Variable(TEMPORAL_ADDRESS, "temporal_address", "`localhost:7233`",
             "Temporal frontend `HOST:PORT`; `--address` overrides it"),
    Variable(TEMPORAL_NAMESPACE, "temporal_namespace", "`default`",
             "Temporal namespace; `--namespace` (of `pressroom worker`) overrides it"),
    Variable(TASK_QUEUE, "task_queue", "`pressroom`",
             "task queue of workers and new jobs; `--task-queue` overrides it"),
    Variable(HELPER_PROCESSES, "helper_processes", "1 on a multi-core machine, else 0",
             "processes a worker runs context assembly (and extractive drafts) in; `0` "
             "keeps them in the worker process; `--helper-processes` overrides it"),
    Variable(WORKER_GRACE_SECONDS, "worker_grace_seconds", "`10`",
             "seconds a command on a running job waits for a worker to poll before saying "
             "none does"),
    Variable(WORKER_DRAIN_SECONDS, "worker_drain_seconds", "`20`",
             "on SIGTERM/SIGINT a worker stops polling and gives its running activities "
             "this many seconds to finish; any still running are then cancelled and handed "
             "back to the server (retried on another worker), its helper processes closed, "
             "and it exits 0; `--drain-seconds` overrides it"),
    Variable(REVIEWER, "reviewer", "your user name",
             "reviewer principal of `approve` / `request-changes` / `reject`; `--as` "
             "overrides it"),
    Variable(REVIEWER_KEY, "reviewer_key", "`$PRESSROOM_HOME/keys/<reviewer>.key`",
             "the Ed25519 private key (`pressroom reviewer keygen`) that signs review "
             "decisions, resolutions and cancels; `--key` overrides it"),
    Variable(ATTESTATION_KEYS, "attestation_keys", "unset: revisions are unsigned",
             "the worker's attestation key file (mode 0600; `pressroom db attestation-key "
             "FILE` creates or rotates it): `key_id:base64secret` lines, the first signs "
             "every artifact revision the store writes, all of them verify older ones; a "
             "revision that fails the check is not admitted into a model request "
             "(SECURITY.md). Every worker of a store needs the same file"),
    Variable(ENV_TEMPORAL_ADDRESS, "temporal_env", "the profile's `address`",
             "Temporal frontend `HOST:PORT` (Temporal's own variable, `temporalio.envconfig`); "
             "`PRESSROOM_TEMPORAL_ADDRESS` and `--address` win over it"),
    Variable(ENV_TEMPORAL_NAMESPACE, "temporal_env", "the profile's `namespace`",
             "Temporal namespace; `PRESSROOM_TEMPORAL_NAMESPACE` and `--namespace` win over it"),
    Variable(ENV_TEMPORAL_API_KEY, "temporal_env", "the profile's `api_key`",
             "API key sent as a bearer token (Temporal Cloud); turns TLS on. Printable ASCII "
             "without spaces, else refused before connecting; never printed"),
    Variable(ENV_TEMPORAL_TLS, "temporal_env", "on with an API key or a TLS file, else off",
             "`true` / `false`: TLS on or off whatever else is set"),
    Variable(ENV_TEMPORAL_TLS_CLIENT_CERT, "temporal_env", "the profile's `tls.client_cert_path`",
             "client certificate (PEM) for mTLS; goes with `TEMPORAL_TLS_CLIENT_KEY_PATH`. "
             "`pressroom worker --tls-cert/--tls-key/--tls-ca` replace the three files"),
    Variable(ENV_TEMPORAL_TLS_CLIENT_KEY, "temporal_env", "the profile's `tls.client_key_path`",
             "the client certificate's private key (PEM)"),
    Variable(ENV_TEMPORAL_TLS_SERVER_CA, "temporal_env",
             "the profile's `tls.server_ca_cert_path`, else the system roots",
             "CA certificate (PEM) the server's certificate must chain to"),
    Variable(ENV_TEMPORAL_TLS_SERVER_NAME, "temporal_env", "the address's host",
             "server name (SNI) the server's certificate must match"),
    Variable(ENV_TEMPORAL_PROFILE, "temporal_env", "`default`",
             "profile of the configuration file to use (a named profile that is not there is "
             "refused)"),
    Variable(ENV_TEMPORAL_CONFIG_FILE, "temporal_env",
             "`~/.config/temporalio/temporal.toml` (if present)",
             "Temporal's TOML configuration file (`[profile.NAME]` tables: `address`, "
             "`namespace`, `api_key`, `[profile.NAME.tls]`); a file named here must exist. "
             "The other `TEMPORAL_*` client variables (`TEMPORAL_TLS_*_DATA`, "
             "`TEMPORAL_TLS_DISABLE_HOST_VERIFICATION`, `TEMPORAL_GRPC_META_*`) are read too"),
    Variable(DEBUG, "debug", "off",
             "any non-empty value: an unexpected error shows its traceback instead of one "
             "line"),
    Variable(METRICS_PORT, "metrics_port", "unset: no metrics endpoint",
             "the worker serves Temporal's and Pressroom's metrics for Prometheus on "
             "`http://0.0.0.0:PORT/metrics`; `pressroom worker --metrics-port` overrides it"),
    Variable(HEALTH_PORT, "health_address", "unset: no health endpoint",
             "`PORT` or `HOST:PORT` (`[::]:PORT` for IPv6): the worker answers `GET /healthz` "
             "(200 while its event loop runs) and `GET /readyz` (200 while it polls, 503 "
             "before and while it drains) on it; a bare port binds `127.0.0.1` only, "
             "containers use `0.0.0.0:PORT`; `pressroom worker --health-port` overrides it"),
    Variable(TRACING, "tracing", "off",
             "`on` (or `1`, `true`): the worker traces workflows, activities, assemblies and "
             "model calls with OpenTelemetry, exported over OTLP/HTTP (`OTEL_EXPORTER_OTLP_*`; "
             "needs the `tracing` extra); `--tracing` overrides it"),
    Variable(LOG_FORMAT, "log_format", "`text`",
             "`json`: the worker logs one JSON object per line, with the job, step and "
             "manifest ids when known; `--log-format` overrides it"),
    Variable(PRICES, "prices", "the shipped table `contracts/prices.yaml` (dated; check it)",
             "a YAML price file (USD per million tokens of input, cached input, cache write "
             "and output, by provider and model; docs/configuration.md#cost-in-money) "
             "whose entries replace the shipped ones: the worker prices each model call with it, "
             "`pressroom run` refuses a job with a cost budget whose model it has no price "
             "for"),
    Variable(MODEL_ENDPOINTS, "model_endpoints", "unset: no job may set `model.base_url`",
             "a YAML file listing the OpenAI-compatible endpoints a job may name in "
             "`model.base_url` (`name`, `url`, and per endpoint `key_required: false` for a "
             "server that needs no key or `key_env` for the variable holding its key; "
             "docs/configuration.md); `pressroom check` / `run` refuse any other URL, and "
             "the worker refuses it again with its own file"),
    Variable(WEB_ALLOWED_DOMAINS, "web_allowed_domains", "unset: no live web page is fetched",
             "domains (separated by `,`) whose pages a job may name as a live `web_page` "
             "source (`url:` and no `path:`); `example.org` allows its subdomains too. A "
             "spec naming another host is refused at submit (SECURITY.md, \"Live web "
             "pages\")"),
    Variable(WEB_ALLOWED_NETWORKS, "web_allowed_networks",
             "unset: only public addresses",
             "networks in CIDR form (separated by `,`) a live web page may be fetched from "
             "although they are loopback, private, link-local, CGNAT or otherwise special "
             "(e.g. `127.0.0.0/8` for a page served on this machine); metadata addresses "
             "are refused unless a network listed here holds them"),
    Variable(MCP_SERVERS, "mcp_servers", "none: no job may use an MCP tool",
             "a YAML or JSON file defining the MCP servers jobs may be granted (docs/mcp.md): "
             "a stdio command with its arguments and environment, or a streamable-HTTP URL "
             "with headers from named variables; read by the worker"),
)


class SettingsError(ValueError):
    """A variable holds a value Pressroom cannot use; the message names the variable."""


def _text(environ: Mapping[str, str], name: str) -> str | None:
    """The variable's value; unset and empty are the same (``None``)."""
    value = environ.get(name)
    return value if value else None


def home_from_env(environ: Mapping[str, str]) -> Path:
    """``$PRESSROOM_HOME`` (``~`` expanded), else ``~/.pressroom``. Not created here: whoever
    writes under it creates what it needs."""
    raw = _text(environ, HOME)
    return Path(raw).expanduser() if raw else Path.home() / ".pressroom"


def fixtures_from_env(environ: Mapping[str, str]) -> Path:
    """``$PRESSROOM_FIXTURES`` (``~`` expanded), else ``<home>/fixtures``."""
    raw = _text(environ, FIXTURES)
    return Path(raw).expanduser() if raw else home_from_env(environ) / "fixtures"


def _roots(environ: Mapping[str, str], name: str) -> tuple[Path, ...]:
    """``os.pathsep``-separated absolute folders (``~`` expanded; empty entries ignored)."""
    raw = _text(environ, name)
    if raw is None:
        return ()
    try:
        return _parse_roots(raw.split(os.pathsep))
    except ValueError as exc:
        raise SettingsError(f"{name}: {exc}") from None


def _parse_roots(raw: Sequence[str]) -> tuple[Path, ...]:
    """A variable's root folders: absolute after ``~`` expansion; ``ValueError`` naming the
    first that is not."""
    roots = []
    for entry in (item.strip() for item in raw):
        if not entry:
            continue
        path = Path(entry).expanduser()
        if not path.is_absolute():
            raise ValueError(f"not an absolute path: {entry!r}")
        roots.append(path)
    return tuple(roots)


def parse_tenant_roots(entries: Sequence[str]) -> dict[str, tuple[Path, ...]]:
    """``TENANT=DIR[:DIR...]`` entries (a variable's, split at ``;``, or repeated flags)
    into tenant → absolute folders, a tenant named twice keeping every folder;
    ``ValueError`` naming the first entry that is not of that form."""
    bound: dict[str, tuple[Path, ...]] = {}
    for entry in (item.strip() for item in entries):
        if not entry:
            continue
        tenant, sep, folders = entry.partition("=")
        tenant = tenant.strip()
        if not sep or not tenant:
            raise ValueError(f"not TENANT=DIR[:DIR...]: {entry!r}")
        roots = _parse_roots(folders.split(os.pathsep))
        if not roots:
            raise ValueError(f"tenant {tenant!r} is bound to no folder")
        bound[tenant] = (*bound.get(tenant, ()), *roots)
    return bound


def _tenant_roots(environ: Mapping[str, str], name: str) -> dict[str, tuple[Path, ...]]:
    raw = _text(environ, name)
    if raw is None:
        return {}
    try:
        return parse_tenant_roots(raw.split(";"))
    except ValueError as exc:
        raise SettingsError(f"{name}: {exc}") from None


def _database_url(environ: Mapping[str, str]) -> str | None:
    current, old = _text(environ, DATABASE_URL), _text(environ, STORE_URL)
    if old is None:
        return current
    if current is not None and current != old:
        raise SettingsError(f"{STORE_URL} (deprecated) and {DATABASE_URL} name different "
                            f"databases; set only {DATABASE_URL}")
    warnings.warn(f"{STORE_URL} is deprecated and will stop working in the next release; "
                  f"use {DATABASE_URL}", DeprecationWarning, stacklevel=3)
    return old


def _helper_processes(environ: Mapping[str, str]) -> int | None:
    raw = (environ.get(HELPER_PROCESSES) or "").strip()
    if not raw:
        return None
    try:
        return parse_helper_count(raw)
    except ValueError as exc:
        raise SettingsError(f"{HELPER_PROCESSES}: {exc}") from None


def _metrics_port(environ: Mapping[str, str]) -> int | None:
    raw = (environ.get(METRICS_PORT) or "").strip()
    if not raw:
        return None
    try:
        return parse_port(raw)
    except ValueError as exc:
        raise SettingsError(f"{METRICS_PORT}: {exc}") from None


def _health_address(environ: Mapping[str, str]) -> tuple[str, int] | None:
    raw = (environ.get(HEALTH_PORT) or "").strip()
    if not raw:
        return None
    try:
        return parse_health_address(raw)
    except ValueError as exc:
        raise SettingsError(f"{HEALTH_PORT}: {exc}") from None


def parse_health_address(raw: str) -> tuple[str, int]:
    """``PORT`` (on ``DEFAULT_HEALTH_HOST``), ``HOST:PORT`` or ``[V6]:PORT`` as typed
    (variable or ``--health-port``) into ``(host, port)``; ``ValueError`` naming what is
    wrong."""
    raw = raw.strip()
    if ":" not in raw:
        return DEFAULT_HEALTH_HOST, parse_port(raw)
    host, _, port = raw.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"an IPv6 host goes in brackets ([::]:PORT), got {raw!r}")
    if not host or any(c.isspace() or c in "[]/" for c in host):
        raise ValueError(f"not HOST:PORT: {raw!r}")
    return host, parse_port(port)


def parse_port(raw: str) -> int:
    """A TCP port as typed (variable or ``--metrics-port``); ``ValueError`` naming what is
    wrong."""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"not a port number: {raw!r}") from None
    if not 1 <= value <= 65535:
        raise ValueError(f"a port is 1 to 65535, got {value}")
    return value


def _switch(environ: Mapping[str, str], name: str) -> bool:
    raw = (_text(environ, name) or "").strip().lower()
    if raw in ("", "0", "off", "false", "no"):
        return False
    if raw in ("1", "on", "true", "yes"):
        return True
    raise SettingsError(f"{name} must be on or off, got {raw!r}")


def _web_list(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A ``,``-separated list (domains or networks), blanks dropped. Whether each entry is
    a domain or a network is checked where the worker builds its web rules
    (``worker.web_policy``, with ``contracts.web_policy``): this module imports nothing of
    Pressroom's."""
    raw = _text(environ, name)
    return () if raw is None else tuple(item.strip() for item in raw.split(",") if item.strip())


def _log_format(environ: Mapping[str, str]) -> str:
    raw = (_text(environ, LOG_FORMAT) or "text").strip().lower()
    if raw not in LOG_FORMATS:
        raise SettingsError(f"{LOG_FORMAT} must be one of {', '.join(LOG_FORMATS)}, "
                            f"got {raw!r}")
    return raw


def parse_helper_count(raw: str) -> int:
    """A helper count as typed (variable or ``--helper-processes``); ``ValueError`` naming
    what is wrong."""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"not a whole number: {raw!r}") from None
    if value < 0:
        raise ValueError(f"must be 0 or more, got {value}")
    return value


def _grace_seconds(environ: Mapping[str, str], name: str = WORKER_GRACE_SECONDS,
                   default: float = DEFAULT_WORKER_GRACE_SECONDS) -> float:
    raw = _text(environ, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds, got {raw!r}") from None
    return max(0.0, value)  # a negative (or NaN) grace is no grace


class Settings(BaseModel):
    """Pressroom's configuration, read once from the environment (``from_env``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path = Field(default_factory=lambda: home_from_env({}))
    #: ``None``: the SQLite file under ``home`` (see ``store_url``).
    database_url: str | None = None
    #: ``None``: ``home / "fixtures"`` (see ``fixtures_dir``).
    fixtures: Path | None = None
    #: Folders jobs may read from besides Pressroom's own (see ``source_root_paths``).
    source_roots: tuple[Path, ...] = ()
    #: Folders a destination may lie in besides ``home`` (see ``publish_root_paths``).
    publish_roots: tuple[Path, ...] = ()
    #: Tenants bound to their own source / publish roots (``TENANT=DIR`` bindings); once
    #: either holds a tenant, a job's roots are its tenant's (``contracts.path_safety``).
    tenant_source_roots: dict[str, tuple[Path, ...]] = Field(default_factory=dict)
    tenant_publish_roots: dict[str, tuple[Path, ...]] = Field(default_factory=dict)
    #: The worker accepts only reviewer and operator keys its registry holds for them.
    registered_reviewers_only: bool = False
    #: The two below count as set only when given (``model_fields_set``: the variable, or a
    #: flag through ``model_copy``); unset, ``TEMPORAL_*`` and the profile decide
    #: (``client.connection``), the default last.
    temporal_address: str = DEFAULT_ADDRESS
    temporal_namespace: str = DEFAULT_NAMESPACE
    task_queue: str = DEFAULT_TASK_QUEUE
    #: ``None``: decided by the machine's cores (see ``helper_count``).
    helper_processes: int | None = Field(default=None, ge=0)
    worker_grace_seconds: float = Field(default=DEFAULT_WORKER_GRACE_SECONDS, ge=0)
    #: How long a stopping worker waits for its running activities (``worker.py``).
    worker_drain_seconds: float = Field(default=DEFAULT_WORKER_DRAIN_SECONDS, ge=0)
    #: ``None``: the user name of the process.
    reviewer: str | None = None
    #: ``None``: ``keys_dir / <reviewer>.key``.
    reviewer_key: Path | None = None
    #: The attestation key file (read by the worker, ``artifacts.attestation``); ``None``:
    #: revisions are written and read unsigned.
    attestation_keys: Path | None = None
    debug: bool = False
    #: The worker's Prometheus port (``None``: no endpoint).
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    #: Where the worker's health endpoint listens, ``(host, port)`` (``None``: none).
    health_address: tuple[str, int] | None = None
    #: The worker traces with OpenTelemetry (``worker.tracing_interceptors``).
    tracing: bool = False
    #: How the worker logs: ``text`` or ``json`` (``activities.telemetry``).
    log_format: str = "text"
    #: The non-empty ``TEMPORAL_*`` variables as read (``temporalio.envconfig``'s: address,
    #: namespace, API key, TLS, profile, config file); ``client.connection`` turns them
    #: into connection options, below the ``PRESSROOM_TEMPORAL_*`` settings and the flags.
    #: Not in the repr: it may hold an API key.
    temporal_env: dict[str, str] = Field(default_factory=dict, repr=False)
    #: The operator's price file (``contracts.pricing.load_prices``); ``None``: the shipped
    #: defaults alone.
    prices: Path | None = None
    #: The operator's allow-list of model endpoints (``contracts.model_endpoints``);
    #: ``None``: none, so no job may name a ``model.base_url``.
    model_endpoints: Path | None = None
    #: Live web pages (``contracts.web_policy``): the domains a job may fetch and the
    #: special networks a fetch may reach (``worker.web_policy`` checks and combines them).
    web_allowed_domains: tuple[str, ...] = ()
    web_allowed_networks: tuple[str, ...] = ()
    #: The operator's MCP server file (``contracts.mcp_servers.load_mcp_servers``); ``None``:
    #: no server is defined, and a job granted an MCP tool is refused.
    mcp_servers: Path | None = None


    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Parse ``environ`` (``os.environ`` in the entry points); ``SettingsError`` names a
        variable whose value is unusable. Unset and empty mean the default."""
        return cls(
            home=home_from_env(environ),
            database_url=_database_url(environ),
            fixtures=fixtures_from_env(environ) if _text(environ, FIXTURES) else None,
            source_roots=_roots(environ, SOURCE_ROOTS),
            publish_roots=_roots(environ, PUBLISH_ROOTS),
            tenant_source_roots=_tenant_roots(environ, TENANT_SOURCE_ROOTS),
            tenant_publish_roots=_tenant_roots(environ, TENANT_PUBLISH_ROOTS),
            registered_reviewers_only=_switch(environ, REGISTERED_REVIEWERS_ONLY),
            task_queue=_text(environ, TASK_QUEUE) or DEFAULT_TASK_QUEUE,
            helper_processes=_helper_processes(environ),
            worker_grace_seconds=_grace_seconds(environ),
            worker_drain_seconds=_grace_seconds(environ, WORKER_DRAIN_SECONDS,
                                                DEFAULT_WORKER_DRAIN_SECONDS),
            reviewer=_text(environ, REVIEWER),
            reviewer_key=(Path(raw).expanduser() if (raw := _text(environ, REVIEWER_KEY))
                          else None),
            attestation_keys=(Path(raw).expanduser()
                              if (raw := _text(environ, ATTESTATION_KEYS)) else None),
            debug=_text(environ, DEBUG) is not None,
            metrics_port=_metrics_port(environ),
            health_address=_health_address(environ),
            tracing=_switch(environ, TRACING),
            log_format=_log_format(environ),
            prices=Path(raw).expanduser() if (raw := _text(environ, PRICES)) else None,
            model_endpoints=(Path(raw).expanduser()
                             if (raw := _text(environ, MODEL_ENDPOINTS)) else None),
            web_allowed_domains=_web_list(environ, WEB_ALLOWED_DOMAINS),
            web_allowed_networks=_web_list(environ, WEB_ALLOWED_NETWORKS),
            mcp_servers=(Path(raw).expanduser() if (raw := _text(environ, MCP_SERVERS))
                         else None),
            temporal_env={name: value for name, value in environ.items()
                          if name.startswith(TEMPORAL_PREFIX) and value},
            # only an address or namespace actually set counts as set: the connection
            # lets Temporal's own variables and profile fill the others
            **{field: value for field, name in (("temporal_address", TEMPORAL_ADDRESS),
                                                ("temporal_namespace", TEMPORAL_NAMESPACE))
               if (value := _text(environ, name))},
        )

    @property
    def store_url(self) -> str:
        """The artifact store's URL: ``database_url``, else the SQLite file under ``home``."""
        return self.database_url or f"sqlite+aiosqlite:///{self.home / DB_FILENAME}"

    @property
    def fixtures_dir(self) -> Path:
        """``fixtures``, else ``home / "fixtures"``."""
        return self.fixtures or self.home / "fixtures"

    def source_root_paths(self, *extra: Path) -> tuple[Path, ...]:
        """Where a job may read: ``home``, the fixtures folder, ``source_roots`` and
        ``extra`` (what a command adds, e.g. the job file's folder)."""
        return (self.home, self.fixtures_dir, *self.source_roots, *extra)

    def publish_root_paths(self, *extra: Path) -> tuple[Path, ...]:
        """Where a job's destination may lie: ``home``, ``publish_roots`` and ``extra``."""
        return (self.home, *self.publish_roots, *extra)

    @property
    def private_paths(self) -> tuple[Path, ...]:
        """Pressroom's own state, never read or written for a job even inside a root: the
        git cache, reviewer keys and registry, the review console's state (its reviewer
        accounts hold encrypted signing keys), the self-check's scratch folder, the
        attestation key file wherever ``attestation_keys`` puts it, and the SQLite store
        with its journal files wherever ``database_url`` puts it. (Files directly in
        ``home`` — databases, logs — are refused too: ``contracts.path_safety``.)"""
        private = [self.home / name
                   for name in ("git-cache", "keys", "reviewers", "selfcheck", "console")]
        if self.attestation_keys is not None:
            private.append(self.attestation_keys)
        url = self.store_url
        if url.startswith("sqlite") and ":///" in url:
            store = Path(url.split(":///", 1)[1].split("?", 1)[0])
            private += [store, *(store.with_name(store.name + suffix)
                                 for suffix in ("-wal", "-shm", "-journal"))]
        return tuple(private)

    def with_roots(self, *, sources: Sequence[Path] | None = None,
                   publish: Sequence[Path] | None = None) -> Settings:
        """These settings with ``--source-root`` / ``--publish-root`` values, which replace
        the variables' roots when given (Pressroom's own folders stay roots)."""
        update: dict[str, tuple[Path, ...]] = {}
        if sources:
            update["source_roots"] = tuple(sources)
        if publish:
            update["publish_roots"] = tuple(publish)
        return self.model_copy(update=update) if update else self

    def with_tenant_roots(self, *, sources: Sequence[str] | None = None,
                          publish: Sequence[str] | None = None) -> Settings:
        """These settings with ``--tenant-source-root`` / ``--tenant-publish-root`` values
        (``TENANT=DIR[:DIR...]``), which replace the variables' bindings when given;
        ``ValueError`` names a value that is not of that form."""
        update: dict[str, dict[str, tuple[Path, ...]]] = {}
        if sources:
            update["tenant_source_roots"] = parse_tenant_roots(sources)
        if publish:
            update["tenant_publish_roots"] = parse_tenant_roots(publish)
        return self.model_copy(update=update) if update else self

    @property
    def tenants_bound(self) -> bool:
        """Whether any tenant is bound to roots of its own (then every job's roots are its
        tenant's)."""
        return bool(self.tenant_source_roots or self.tenant_publish_roots)

    @property
    def locations(self) -> dict[str, str]:
        """What ``${PRESSROOM_HOME}`` and ``${PRESSROOM_FIXTURES}`` in a job's source
        locations stand for on this machine: the worker hands it to every acquisition
        (``contracts.source_specs.expand_location``), which reads no environment itself."""
        return {HOME: str(self.home), FIXTURES: str(self.fixtures_dir)}

    @property
    def keys_dir(self) -> Path:
        """Where ``pressroom reviewer keygen`` writes private keys (mode 0700, keys 0600)."""
        return self.home / "keys"

    @property
    def reviewers_dir(self) -> Path:
        """The operator's reviewer registry: ``<name>.pub`` files holding ``ed25519:…``
        public keys; ``pressroom run`` pins a name-only reviewer's key from it."""
        return self.home / "reviewers"

    @property
    def console_accounts_dir(self) -> Path:
        """The review console's reviewer accounts (``webconsole.accounts``): one file per
        reviewer with its argon2 password hash and its password-encrypted signing key
        (folder 0700, files 0600; private: ``private_paths`` holds ``home / "console"``)."""
        return self.home / "console" / "accounts"

    def helper_count(self, cpu_count: int | None) -> int:
        """``helper_processes``, else 1 with two or more cores, else 0."""
        if self.helper_processes is not None:
            return self.helper_processes
        return 1 if (cpu_count or 1) >= 2 else 0


def load(environ: Mapping[str, str]) -> tuple[Settings, list[str]]:
    """``Settings.from_env(environ)`` and the deprecation notes it raised, as text: the entry
    points print them on stderr (Python hides a ``DeprecationWarning`` outside
    ``__main__``), so a user of an old name hears about it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        settings = Settings.from_env(environ)
    notes = []
    for w in caught:
        if issubclass(w.category, DeprecationWarning):
            notes.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return settings, notes
