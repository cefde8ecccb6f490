"""Builds and runs the Temporal worker: the workflow, the activities and the data converter.

``python worker.py`` (or ``pressroom worker``) joins the cluster named by the settings
(``settings.Settings``: ``PRESSROOM_TEMPORAL_ADDRESS``, ``PRESSROOM_TEMPORAL_NAMESPACE``,
``PRESSROOM_TASK_QUEUE``, ``PRESSROOM_DATABASE_URL``, ``PRESSROOM_HELPER_PROCESSES``, read
once by ``main``) or by flags, which win, and runs until SIGINT/SIGTERM. Crash tests start
it as a separate process and SIGKILL it.

Stopping drains: on SIGTERM/SIGINT the worker stops polling, gives its running activities
``PRESSROOM_WORKER_DRAIN_SECONDS`` / ``--drain-seconds`` (default 20) to finish — they keep
heartbeating meanwhile, so the server does not time them out — then cancels what still
runs; a cancelled activity hands its attempt back as a retryable ``WorkerShutdown`` failure
(``activities.runtime.heartbeating``) and the server retries it on another worker at once.
Then the helper processes are closed (one still busy with a handed-back attempt is killed)
and the process exits 0. ``--identity`` names the worker in the server's histories
(default ``<pid>@<host>``).

Health: with ``PRESSROOM_HEALTH_PORT`` / ``--health-port`` (``PORT`` on 127.0.0.1, or
``HOST:PORT``) it serves ``GET /healthz`` (200 while its event loop answers) and
``GET /readyz`` (200 only while it polls: client connected, store opened at start, Worker
started; 503 before that and from SIGTERM/SIGINT on, while it drains) —
``cli.health``.

Context assembly (and a draft by a CPU-bound provider such as ``extractive``) runs in
helper processes (``activities.offload``): one by default on a machine with more than one
core, none on a single core (a helper there only adds hand-offs); ``--helper-processes 0``
keeps them in the worker process.

It reads a job's paths only inside its source roots and publishes only inside its publish
roots (``contracts.path_safety``): ``$PRESSROOM_HOME`` and the fixtures folder, plus
``PRESSROOM_SOURCE_ROOTS`` / ``PRESSROOM_PUBLISH_ROOTS`` or ``--source-root`` /
``--publish-root`` (repeatable; they replace the variables). Tenants bound to roots of
their own (``--tenant-source-root`` / ``--tenant-publish-root TENANT=DIR``, or
``PRESSROOM_TENANT_SOURCE_ROOTS`` / ``PRESSROOM_TENANT_PUBLISH_ROOTS``) read and publish
only inside those; ``--registered-reviewers-only`` accepts only the reviewer keys of the
operator's registry (``activities.reviewer_registry``).

This module wires the parts: ``build_runtime`` builds the helper pool and hands it to the
``ActivityRuntime`` the activities share, so neither of those two modules imports the
other's builder (``offload`` does not import ``runtime`` at all).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.worker import Worker

from activities import telemetry
from activities.error_classes import ClassifyingInterceptor
from activities.error_redaction import RedactingInterceptor
from activities.offload import HelperPool
from activities.registry import build_activities
from activities.runtime import ActivityRuntime
from artifacts.attestation import AttestationKeyError, Keyring, load_keyring
from cli.health import HealthServer, HealthState, start_health_server
from client import connection
from client.connection import TlsFlags, where
from client.errors import SearchAttributesMissing
from client.visibility_admin import ensure_search_attributes
from contracts.errors import JobError
from contracts.mcp_servers import McpConfigError, McpServers, load_mcp_servers
from contracts.model_endpoints import ModelEndpointError, ModelEndpoints, load_endpoints
from contracts.path_safety import PathRoots
from contracts.pricing import PriceError, PriceTable, load_prices
from contracts.web_policy import WebFetchPolicy
from settings import (
    ATTESTATION_KEYS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    HEALTH_PORT,
    HELPER_PROCESSES,
    LOG_FORMATS,
    MCP_SERVERS,
    METRICS_PORT,
    MODEL_ENDPOINTS,
    PRICES,
    PUBLISH_ROOTS,
    REGISTERED_REVIEWERS_ONLY,
    SOURCE_ROOTS,
    TENANT_PUBLISH_ROOTS,
    TENANT_SOURCE_ROOTS,
    WEB_ALLOWED_DOMAINS,
    WEB_ALLOWED_NETWORKS,
    WORKER_DRAIN_SECONDS,
    Settings,
    SettingsError,
    load,
    parse_health_address,
    parse_helper_count,
    parse_port,
)
from workflows.path_check import CheckJobPathsWorkflow
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import (
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOW_RUNNER,
)


async def connect(address: str, namespace: str = DEFAULT_NAMESPACE, *,
                  tls_cert: str | None = None, tls_key: str | None = None,
                  tls_ca: str | None = None, settings: Settings | None = None) -> Client:
    """A client with Pressroom's data converter on ``address`` / ``namespace``, built like
    every other client (``client.connection``): the settings' ``TEMPORAL_*`` API key and
    TLS apply, and the ``--tls-*`` flags, when given, replace its TLS files.

    A client certificate and its key go together: one without the other is refused here
    (a lone key used to be ignored, silently connecting without TLS).
    """
    return await connection.connect(settings or Settings(), address=address,
                                    namespace=namespace,
                                    tls=TlsFlags(cert=tls_cert, key=tls_key, ca=tls_ca))


def build_worker(client: Client, runtime: ActivityRuntime, *,
                 task_queue: str = DEFAULT_TASK_QUEUE, max_concurrent_activities: int = 100,
                 drain_seconds: float = 0.0, identity: str | None = None,
                 **extra: Any) -> Worker:
    """The Pressroom worker on ``task_queue``; on shutdown its running activities get
    ``drain_seconds`` to finish before they are cancelled (and handed back); ``identity``
    names it in histories (``None``: the client's, ``<pid>@<host>``).

    ``drain_seconds`` defaults to 0 (cancel at once, the SDK's own default): a worker built
    in-process is stopped by its owner, who decides; ``run_worker`` — every worker process —
    passes ``PRESSROOM_WORKER_DRAIN_SECONDS``."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ResearchJobWorkflow, CheckJobPathsWorkflow],
        activities=build_activities(runtime),
        workflow_runner=WORKFLOW_RUNNER,
        workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
        # no activity error leaves the worker with a secret in its message (SECURITY.md);
        # inside that, a permanent error anywhere in a failure's chain is marked
        # non-retryable (activities/error_classes.py). The first interceptor is outermost.
        interceptors=[*tracing_interceptors(), RedactingInterceptor(),
                      ClassifyingInterceptor()],
        max_concurrent_activities=max_concurrent_activities,
        graceful_shutdown_timeout=timedelta(seconds=drain_seconds),
        identity=identity,
        **extra,
    )



# ------------------------------------------------------------------ observability
# docs/architecture.md#observability; the metric names and labels: activities.telemetry

def telemetry_runtime(bind_address: str) -> Runtime:
    """A Temporal runtime whose metrics — the SDK's and Pressroom's own, recorded through
    ``activity.metric_meter()`` — are served for Prometheus on ``bind_address``
    (``HOST:PORT``, path ``/metrics``). One per process: each starts its own threads and
    its own HTTP server."""
    return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=bind_address)))


def tracing_interceptors() -> list[Any]:
    """``TracingInterceptor`` on the tracer ``activities.telemetry`` uses, when one is set
    (``observe`` with tracing on, or a test); else none."""
    tracer = telemetry.current_tracer()
    if tracer is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    # workflow spans even when the starting client does not trace (the CLI, the console)
    return [TracingInterceptor(tracer, always_create_workflow_spans=True)]


def otlp_tracer() -> Any:
    """A tracer exporting over OTLP/HTTP (the ``OTEL_EXPORTER_OTLP_*`` variables; the
    ``tracing`` extra); a ``JobError`` when that extra is not installed."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise JobError("PRESSROOM_TRACING needs the tracing extra: "
                       "pip install 'pressroom[tracing]'") from None
    provider = TracerProvider(resource=Resource.create({"service.name": "pressroom-worker"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("pressroom")


def with_observability(settings: Settings, *, metrics_port: int | None = None,
                       tracing: bool | None = None, log_format: str | None = None,
                       health_address: tuple[str, int] | None = None) -> Settings:
    """``settings`` with the flags that were given (``None``: the setting stays)."""
    update: dict[str, Any] = {key: value for key, value in (
        ("metrics_port", metrics_port), ("tracing", tracing), ("log_format", log_format),
        ("health_address", health_address))
        if value is not None}
    return settings.model_copy(update=update) if update else settings


_observed = False


def observe(settings: Settings) -> None:
    """Once per process: JSON log lines when ``log_format`` is ``json`` (text: Python's
    default, warnings and errors), the Prometheus endpoint on ``metrics_port`` (as the
    default runtime, so every client made after this reports to it), the OTLP tracer when
    ``tracing``."""
    global _observed
    if _observed:
        return
    _observed = True
    if settings.log_format == "json":
        telemetry.configure_logging("json")
    if settings.metrics_port is not None:
        Runtime.set_default(telemetry_runtime(f"0.0.0.0:{settings.metrics_port}"))
    if settings.tracing and telemetry.current_tracer() is None:
        telemetry.use_tracer(otlp_tracer())

def default_helper_processes(settings: Settings) -> int:
    """``settings.helper_processes``, else 1 with two or more cores, else 0."""
    return settings.helper_count(os.cpu_count())


def build_helper_pool(store_url: str, processes: int, *, locations: Mapping[str, str],
                      roots: PathRoots | None = None,
                      attestation: Keyring | None = None) -> HelperPool:
    """``processes`` helper processes, each with its own ``ActivityRuntime`` on ``store_url``
    (with the same locations, roots and attestation keys as the worker's)."""
    return HelperPool(functools.partial(ActivityRuntime, store_url, locations=dict(locations),
                                        roots=roots, attestation=attestation), processes)


def build_runtime(store_url: str, *, locations: Mapping[str, str],
                  roots: PathRoots | None = None, helper_processes: int = 0,
                  attestation: Keyring | None = None,
                  registered_reviewers_only: bool = False,
                  prices: PriceTable | None = None,
                  endpoints: ModelEndpoints | None = None,
                  web_policy: WebFetchPolicy | None = None,
                  mcp_servers: McpServers | None = None,
                  mcp_environ: Mapping[str, str] | None = None,
                  reviewers_dir: Path | None = None) -> ActivityRuntime:
    """The runtime the activities share; with ``helper_processes`` > 0 it gets a helper pool
    of that size (started now, closed with the runtime), with 0 none. ``locations``:
    ``Settings.locations``, what source-location placeholders stand for on this worker;
    ``roots``: the folders it reads a job's paths from and publishes into
    (``PathRoots.of(settings)``; none: only Pressroom's own home and fixtures);
    ``attestation``: the keys revisions are signed and checked with (``attestation_keyring``);
    ``registered_reviewers_only``: only registered reviewer keys may review
    (``activities.reviewer_registry``). ``prices``: what model calls are priced with
    (``price_table``; ``None``: the defaults). ``endpoints``: the model endpoints a job may
    name (``endpoint_list``; ``None``: none). ``web_policy``: where live web pages may be
    fetched from (``Settings.web_policy``; ``None``: nowhere). ``reviewers_dir``: the
    reviewer registry (``Settings.reviewers_dir``; ``None``: ``reviewers`` under the home
    in ``locations``)."""
    helpers = (build_helper_pool(store_url, helper_processes, locations=locations, roots=roots,
                                 attestation=attestation)
               if helper_processes else None)
    return ActivityRuntime(store_url, locations=locations, roots=roots, helpers=helpers,
                           attestation=attestation,
                           registered_reviewers_only=registered_reviewers_only, prices=prices,
                           endpoints=endpoints, web_policy=web_policy,
                           mcp_servers=mcp_servers, mcp_environ=mcp_environ,
                           reviewers_dir=reviewers_dir)


def endpoint_list(settings: Settings) -> ModelEndpoints:
    """The operator's model endpoints (``settings.model_endpoints``); a file that cannot be
    used is a ``JobError`` naming the variable and the file."""
    try:
        return load_endpoints(settings.model_endpoints)
    except ModelEndpointError as exc:
        raise JobError(f"{MODEL_ENDPOINTS}: {exc}") from None


def mcp_server_table(settings: Settings) -> McpServers | None:
    """The operator's MCP servers (``settings.mcp_servers``); a file that cannot be used is
    a ``JobError`` naming the variable and the field."""
    try:
        return load_mcp_servers(settings.mcp_servers)
    except McpConfigError as exc:
        raise JobError(f"{MCP_SERVERS}: {exc}") from None


def mcp_header_values(servers: McpServers | None) -> dict[str, str]:
    """The variables the operator's HTTP servers take headers from, read here at the edge
    (settings.py: nothing below the entry points reads the environment); only those."""
    names = {var for server in (servers.servers.values() if servers else ())
             for var in server.headers_from_env.values()}
    return {name: os.environ[name] for name in sorted(names) if os.environ.get(name)}


def price_table(settings: Settings) -> PriceTable:
    """The shipped prices with ``settings.prices`` over them; a file that cannot be used is a
    ``JobError`` naming the variable, the file and the key."""
    try:
        return load_prices(settings.prices)
    except PriceError as exc:
        raise JobError(f"{PRICES}: {exc}") from None


def web_policy(settings: Settings) -> WebFetchPolicy:
    """The worker's rules for live web pages from ``PRESSROOM_WEB_ALLOWED_DOMAINS`` and
    ``PRESSROOM_WEB_ALLOWED_NETWORKS``; an entry that is no domain or network is a
    ``JobError`` naming the variable and the entry."""
    for name, field, value in ((WEB_ALLOWED_DOMAINS, "allowed_domains",
                                settings.web_allowed_domains),
                               (WEB_ALLOWED_NETWORKS, "allowed_networks",
                                settings.web_allowed_networks)):
        try:
            WebFetchPolicy.model_validate({field: value})
        except ValidationError as exc:
            problem = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            raise JobError(f"{name}: {problem}") from None
    return WebFetchPolicy(allowed_domains=settings.web_allowed_domains,
                          allowed_networks=settings.web_allowed_networks)


def attestation_keyring(settings: Settings) -> Keyring | None:
    """The keys of ``settings.attestation_keys`` (``None`` when unset); a file that cannot
    be used is a ``JobError`` naming it (never quoting a secret)."""
    if settings.attestation_keys is None:
        return None
    try:
        return load_keyring(settings.attestation_keys)
    except AttestationKeyError as exc:
        raise JobError(f"{ATTESTATION_KEYS}: {exc}") from None


async def register_search_attributes(client: Client) -> None:
    """Register the job's search attributes on the client's namespace (idempotent:
    ``client.visibility_admin``). When this worker may not, one warning line names the
    command an operator must run; the worker runs on (jobs start only once they exist)."""
    try:
        added = await ensure_search_attributes(client)
    except SearchAttributesMissing as exc:
        print(f"pressroom worker: warning: {exc}", file=sys.stderr, flush=True)
        return
    if added:
        print(f"pressroom worker: registered search attributes {', '.join(added)} on "
              f"namespace {client.namespace!r}", flush=True)


async def run_worker(settings: Settings, *, address: str | None = None,
                     namespace: str | None = None, task_queue: str | None = None,
                     store_url: str | None = None, tls_cert: str | None = None,
                     tls_key: str | None = None, tls_ca: str | None = None,
                     ready: asyncio.Event | None = None, stop: asyncio.Event | None = None,
                     helper_processes: int | None = None, drain_seconds: float | None = None,
                     identity: str | None = None) -> None:
    """Run a worker until ``stop`` is set or SIGINT/SIGTERM arrives, then drain (module
    docstring); each argument given wins over its setting."""
    drain = max(0.0, settings.worker_drain_seconds if drain_seconds is None
                else drain_seconds)
    helpers = (default_helper_processes(settings) if helper_processes is None
               else helper_processes)
    if helpers < 0:
        raise JobError(f"helper processes must be 0 or more, got {helpers}")
    attestation = attestation_keyring(settings)  # a bad key file stops the worker at once
    prices = price_table(settings)  # so does a bad price file
    endpoints = endpoint_list(settings)  # and a bad endpoint file
    mcp_servers = mcp_server_table(settings)  # and a bad MCP server file
    observe(settings)  # logs, metrics endpoint, tracing: before the client connects
    health = HealthState()
    server = await start_health(settings.health_address, health)
    try:
        client = await connection.connect(settings, address=address, namespace=namespace,
                                          tls=TlsFlags(cert=tls_cert, key=tls_key, ca=tls_ca))
        await register_search_attributes(client)
        runtime = build_runtime(store_url or settings.store_url, locations=settings.locations,
                                roots=PathRoots.of(settings),
                                helper_processes=helpers, attestation=attestation,
                                registered_reviewers_only=settings.registered_reviewers_only,
                                prices=prices, endpoints=endpoints,
                                web_policy=web_policy(settings), mcp_servers=mcp_servers,
                                mcp_environ=mcp_header_values(mcp_servers),
                                reviewers_dir=settings.reviewers_dir)
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, _draining, sig, stop, drain, health)
            except (NotImplementedError, RuntimeError):  # not the main thread
                pass
        try:
            if server is not None:
                health.store_ok = await _store_opens(runtime)
            async with build_worker(client, runtime,
                                    task_queue=task_queue or settings.task_queue,
                                    drain_seconds=drain, identity=identity):
                health.started = True
                if ready is not None:
                    ready.set()
                await stop.wait()
                health.draining = True  # also when ``stop`` was set by the caller
            print("pressroom worker: drained; closing helper processes", flush=True)
        finally:
            await runtime.close()
    finally:
        if server is not None:
            await server.close()


async def start_health(address: tuple[str, int] | None,
                       state: HealthState) -> HealthServer | None:
    """The health endpoint on ``address`` (``cli.health``), or ``None`` when unset; a
    port that cannot be bound is a ``JobError`` naming it."""
    if address is None:
        return None
    host, port = address
    try:
        server = await start_health_server(state, host, port)
    except OSError as exc:
        raise JobError(f"{HEALTH_PORT}: cannot listen on {host}:{port}: "
                       f"{exc.strerror or exc}") from None
    print(f"pressroom worker: health endpoint on {host}:{server.port} (/healthz, /readyz)",
          flush=True)
    return server


async def _store_opens(runtime: ActivityRuntime) -> bool:
    """Open the store once before polling (it would be on the first activity anyway), for
    ``/readyz``; a failure is one warning line without the URL, and the worker runs on
    (not ready) as it did before the endpoint existed."""
    try:
        await runtime.store()
    except Exception as exc:
        print(f"pressroom worker: warning: the store could not be opened "
              f"({type(exc).__name__}); /readyz answers 503", file=sys.stderr, flush=True)
        return False
    return True


def _draining(sig: signal.Signals, stop: asyncio.Event, drain: float,
              health: HealthState) -> None:
    health.draining = True  # /readyz says 503 from now on
    if not stop.is_set():
        print(f"pressroom worker: {sig.name}: draining — polling stopped, running activities "
              f"get {drain:g} s, then are handed back", flush=True)
    stop.set()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a Pressroom worker.")
    parser.add_argument("--address", default=None)
    parser.add_argument("--namespace", default=None)
    parser.add_argument("--task-queue", default=None)
    parser.add_argument("--store-url", default=None)
    parser.add_argument("--helper-processes", type=_count, default=None,
                        help="processes that run context assembly (default: "
                             f"${HELPER_PROCESSES}, else 1 on a multi-core machine)")
    parser.add_argument("--source-root", action="append", type=_root, default=None,
                        help="a folder jobs may read from (repeatable; default: "
                             f"${SOURCE_ROOTS}; $PRESSROOM_HOME and fixtures always)")
    parser.add_argument("--publish-root", action="append", type=_root, default=None,
                        help="a folder jobs may publish into (repeatable; default: "
                             f"${PUBLISH_ROOTS}; $PRESSROOM_HOME always)")
    parser.add_argument("--tenant-source-root", action="append", default=None,
                        metavar="TENANT=DIR[:DIR...]",
                        help="bind a tenant to its own source roots (repeatable; default: "
                             f"${TENANT_SOURCE_ROOTS}); once any tenant is bound, a job reads "
                             "only inside its tenant's roots")
    parser.add_argument("--tenant-publish-root", action="append", default=None,
                        metavar="TENANT=DIR[:DIR...]",
                        help="bind a tenant to its own publish roots (repeatable; default: "
                             f"${TENANT_PUBLISH_ROOTS})")
    parser.add_argument("--registered-reviewers-only", action="store_true", default=None,
                        help="accept only reviewer and operator keys the reviewer registry "
                             f"holds (default: ${REGISTERED_REVIEWERS_ONLY}, else off)")
    parser.add_argument("--drain-seconds", type=float, default=None,
                        help="on SIGTERM/SIGINT, seconds running activities get to finish "
                             "before they are handed back (default: "
                             f"${WORKER_DRAIN_SECONDS}, else 20)")
    parser.add_argument("--identity", default=None,
                        help="this worker's name in workflow histories (default: pid@host)")
    parser.add_argument("--metrics-port", type=_port, default=None,
                        help="serve Temporal's and Pressroom's metrics for Prometheus on "
                             f"0.0.0.0:PORT/metrics (default: ${METRICS_PORT}, else none)")
    parser.add_argument("--health-port", type=_health, default=None, metavar="[HOST:]PORT",
                        help="serve GET /healthz and /readyz on PORT (127.0.0.1) or "
                             f"HOST:PORT (default: ${HEALTH_PORT}, else none)")
    parser.add_argument("--tracing", action=argparse.BooleanOptionalAction, default=None,
                        help="OpenTelemetry spans over OTLP/HTTP (default: $PRESSROOM_TRACING)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default=None,
                        help="text or json log lines (default: $PRESSROOM_LOG_FORMAT, else text)")
    args = parser.parse_args(argv)
    try:
        settings, notes = load(os.environ)
    except SettingsError as exc:  # one clear line, like the pressroom CLI
        parser.exit(2, f"pressroom worker: {exc}\n")
    settings = settings.with_roots(sources=args.source_root, publish=args.publish_root)
    try:
        settings = settings.with_tenant_roots(sources=args.tenant_source_root,
                                              publish=args.tenant_publish_root)
    except ValueError as exc:
        parser.exit(2, f"pressroom worker: --tenant-source-root/--tenant-publish-root: {exc}\n")
    if args.registered_reviewers_only:
        settings = settings.model_copy(update={"registered_reviewers_only": True})
    settings = with_observability(settings, metrics_port=args.metrics_port,
                                  tracing=args.tracing, log_format=args.log_format,
                                  health_address=args.health_port)
    for note in notes:
        print(f"pressroom worker: warning: {note}", file=sys.stderr, flush=True)
    print(f"pressroom worker: {where(settings, address=args.address, namespace=args.namespace)} "
          f"queue={args.task_queue or settings.task_queue}", flush=True)
    try:
        asyncio.run(run_worker(settings, address=args.address, namespace=args.namespace,
                               task_queue=args.task_queue, store_url=args.store_url,
                               helper_processes=args.helper_processes,
                               drain_seconds=args.drain_seconds, identity=args.identity))
    except JobError as exc:  # one clear line, like the pressroom CLI
        parser.exit(2, f"pressroom worker: {exc}\n")


def _root(raw: str) -> Path:
    """A root folder as typed: ``~`` expanded, relative to the current folder if relative."""
    return Path(raw).expanduser().resolve()


def _port(raw: str) -> int:
    try:
        return parse_port(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

def _health(raw: str) -> tuple[str, int]:
    try:
        return parse_health_address(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(raw: str) -> int:
    try:
        return parse_helper_count(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


if __name__ == "__main__":
    main()
