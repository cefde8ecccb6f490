"""The Pressroom command line: parses arguments, calls into the package, prints results.

It stays thin on purpose: every command delegates to the command bodies (``cli``), the job
client, the context engine or the artifact store, and turns their typed errors into one
clear line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from settings import Settings

T = TypeVar("T")

app = typer.Typer(help="Pressroom: durable research jobs with auditable context assembly.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
#: without a terminal rich lays everything out for 80 columns, and `explain`'s tables wrap
#: mid-cell in a pipe or a log; piped output gets 200 unless $COLUMNS says otherwise
_PIPE_WIDTH = 200
console = Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ
                  else _PIPE_WIDTH)
err_console = Console(stderr=True)


def _read_settings() -> Settings:
    """``Settings`` from the environment, with a deprecated name's note on stderr; a bad
    value is one line on stderr and exit code 1."""
    import os

    from settings import SettingsError, load

    try:
        settings, notes = load(os.environ)
    except SettingsError as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise SystemExit(1) from None
    for note in notes:
        err_console.print(f"[yellow]warning:[/yellow] {note}", soft_wrap=True, highlight=False)
    return settings


def _settings(ctx: typer.Context) -> Settings:
    """The settings ``main`` read and handed to the app (``ctx.obj``); read here only when
    the app runs without ``main`` (``typer.testing.CliRunner``)."""
    from settings import Settings

    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = _read_settings()
    settings: Settings = root.obj
    return settings


@app.command()
def demo(ctx: typer.Context,
         example: str = typer.Option("retry", "--example",
                                     help="retry (examples/job.yaml), asyncio (a question "
                                          "over this Python's own asyncio source) or mcp "
                                          "(examples/mcp_job.yaml: mcp-server-git and a live "
                                          "page on loopback)")) -> None:
    """Run an example job end to end: server + worker, research turns, draft, approval,
    publish, receipt."""
    from cli.embedded import run_demo
    from webconsole.server import demo_console
    from worker import run_worker

    settings = _settings(ctx)
    raise typer.Exit(_job_cmd(run_demo(console, settings, run_worker, example=example,
                                       console_runner=demo_console), settings) or 0)


# --- durable jobs: dev, worker, run, status, list, approve/request-changes/reject, resolve,
# --- explain, cancel (job-runtime helper; bodies live in cli.commands) ---

_ADDR_HELP = "Temporal frontend HOST:PORT (default $PRESSROOM_TEMPORAL_ADDRESS or localhost:7233)"
_QUEUE_HELP = "Task queue (default $PRESSROOM_TASK_QUEUE or 'pressroom')"


def _job_cmd(coro: Coroutine[Any, Any, T], settings: Settings) -> T:
    """Run a job command; its expected errors become one line on stderr and exit code 1."""
    import asyncio

    from temporalio.service import RPCError

    from artifacts import StoreError
    from context import ContextError
    from contracts.errors import JobError

    try:
        return asyncio.run(coro)
    except (JobError, StoreError, ContextError, RPCError) as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if settings.debug:
            raise
        err_console.print(f"[red]error:[/red] {type(exc).__name__}: {exc} "
                          "(PRESSROOM_DEBUG=1 shows the traceback)", soft_wrap=True,
                          highlight=False)
        raise typer.Exit(1) from None


_JSON_HELP = ("Print one JSON document on stdout and nothing else (progress and warnings go "
              "to stderr); exit codes as without it.")


def _out(as_json: bool, progress: bool = False) -> Console:
    """Where a command prints for people: the terminal, or with ``--json`` nowhere (or
    stderr, for ``progress``) — stdout then holds only the JSON document."""
    import io

    if not as_json:
        return console
    return err_console if progress else Console(file=io.StringIO())


def _print_json(value: Any) -> None:
    """``value`` (a pydantic model, or a list of them) as one JSON document on stdout."""
    import json

    from pydantic import BaseModel

    def dump(v: Any) -> Any:
        return v.model_dump(mode="json") if isinstance(v, BaseModel) else v

    data = [dump(v) for v in value] if isinstance(value, list) else dump(value)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _queue(task_queue: str | None, settings: Settings) -> str:
    return task_queue or settings.task_queue


_SOURCE_ROOT_HELP = ("A folder jobs may read sources, a workspace and a policy file from "
                     "(repeatable; replaces $PRESSROOM_SOURCE_ROOTS; $PRESSROOM_HOME and the "
                     "fixtures folder always count).")
_PUBLISH_ROOT_HELP = ("A folder a job's destination may lie in (repeatable; replaces "
                      "$PRESSROOM_PUBLISH_ROOTS; $PRESSROOM_HOME always counts).")
_SourceRoots = Annotated[list[Path] | None,
                         typer.Option("--source-root", help=_SOURCE_ROOT_HELP)]
_PublishRoots = Annotated[list[Path] | None,
                          typer.Option("--publish-root", help=_PUBLISH_ROOT_HELP)]


_TENANT_ROOT_HELP = ("Bind a tenant to its own source roots, TENANT=DIR[:DIR...] "
                     "(repeatable; replaces $PRESSROOM_TENANT_SOURCE_ROOTS): once any tenant "
                     "is bound, a job reads only inside its tenant's roots and a job of an "
                     "unbound tenant is refused.")
_TENANT_PUBLISH_HELP = ("Bind a tenant to its own publish roots, TENANT=DIR[:DIR...] "
                        "(repeatable; replaces $PRESSROOM_TENANT_PUBLISH_ROOTS).")
_REGISTERED_ONLY_HELP = ("Accept only reviewer and operator keys the reviewer registry "
                         "($PRESSROOM_HOME/reviewers) holds: a job pinning any other key is "
                         "refused (default: $PRESSROOM_REGISTERED_REVIEWERS_ONLY, else off).")
_TenantRoots = Annotated[list[str] | None, typer.Option(
    "--tenant-source-root", metavar="TENANT=DIR", help=_TENANT_ROOT_HELP)]
_TenantPublishRoots = Annotated[list[str] | None, typer.Option(
    "--tenant-publish-root", metavar="TENANT=DIR", help=_TENANT_PUBLISH_HELP)]
_RegisteredOnly = Annotated[bool, typer.Option(
    "--registered-reviewers-only", help=_REGISTERED_ONLY_HELP)]


def _with_tenants(settings: Settings, sources: list[str] | None, publish: list[str] | None,
                  registered_only: bool) -> Settings:
    """``--tenant-source-root`` / ``--tenant-publish-root`` win over the variables (each
    ``TENANT=DIR[:DIR...]``, folders absolute); ``--registered-reviewers-only`` turns the
    mode on (the variable may too)."""
    try:
        settings = settings.with_tenant_roots(sources=sources, publish=publish)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tenant-source-root / "
                                                      "--tenant-publish-root") from None
    if registered_only:
        settings = settings.model_copy(update={"registered_reviewers_only": True})
    return settings


def _with_roots(settings: Settings, sources: list[Path] | None,
                publish: list[Path] | None) -> Settings:
    """``--source-root`` / ``--publish-root`` win over the variables (``~`` expanded,
    relative to the current folder if relative)."""
    def absolute(paths: list[Path] | None) -> list[Path] | None:
        return [p.expanduser().resolve() for p in paths] if paths else None

    return settings.with_roots(sources=absolute(sources), publish=absolute(publish))


@app.command()
def dev(
    ctx: typer.Context,
    port: int = typer.Option(7233, help="gRPC port of the dev server (Web UI on port + 1000)."),
    headless: bool = typer.Option(False, help="Run without the Web UI."),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
    source_root: _SourceRoots = None,
    publish_root: _PublishRoots = None,
    tenant_source_root: _TenantRoots = None,
    tenant_publish_root: _TenantPublishRoots = None,
    registered_reviewers_only: _RegisteredOnly = False,
) -> None:
    """Start the embedded Temporal server ($PRESSROOM_HOME/temporal.db) and a worker (whose
    roots also include the bundled examples/ folder)."""
    from cli.embedded import run_dev
    from worker import run_worker

    settings = _with_tenants(_with_roots(_settings(ctx), source_root, publish_root),
                             tenant_source_root, tenant_publish_root,
                             registered_reviewers_only)
    _job_cmd(run_dev(console, settings, run_worker, port=port, headless=headless,
                     task_queue=_queue(task_queue, settings)), settings)


_TrustedProxies = Annotated[list[str] | None, typer.Option(
    "--trusted-proxy", help="Address of the reverse proxy whose --proxy-header is believed "
    "(repeatable; default 127.0.0.1 and ::1).")]


@app.command()
def web(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", help="Address to listen on. Loopback by default: "
                             "expose the console only behind a TLS-terminating proxy."),
    port: int = typer.Option(8780, help="Port to listen on."),
    proxy_header: str | None = typer.Option(
        None, "--proxy-header", help="Trust this request header (e.g. X-Forwarded-User) as "
        "the signed-in reviewer's name when the request comes from --trusted-proxy."),
    trusted_proxy: _TrustedProxies = None,
    secure_cookies: bool = typer.Option(
        False, "--secure-cookies", help="Mark cookies Secure (the console is served over "
        "HTTPS by the proxy)."),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
) -> None:
    """Serve the review console: jobs, drafts beside their evidence, what the model saw,
    and signed decisions (reviewers sign in with accounts from `pressroom reviewer add`)."""
    from client.connection import where
    from webconsole.server import console_config, serve

    settings = _settings(ctx)
    if address:
        settings = settings.model_copy(update={"temporal_address": address})
    config = console_config(settings, host=host, port=port, proxy_header=proxy_header,
                            secure_cookies=secure_cookies,
                            trusted_proxies=tuple(trusted_proxy or ("127.0.0.1", "::1")))
    console.print(f"review console on http://{host}:{port} (Temporal "
                  f"{where(settings)}, store {settings.store_url.split('://')[0]})",
                  highlight=False)
    _job_cmd(serve(settings, config), settings)


@app.command()
def worker(
    ctx: typer.Context,
    address: str | None = typer.Option(None, help=_ADDR_HELP),
    namespace: str | None = typer.Option(None, help="Temporal namespace (default 'default')."),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
    tls_cert: str | None = typer.Option(None, help="Client certificate (PEM) for mTLS."),
    tls_key: str | None = typer.Option(None, help="Client private key (PEM) for mTLS."),
    tls_ca: str | None = typer.Option(None, help="Server root CA (PEM)."),
    store_url: str | None = typer.Option(None, help="Artifact store URL (default SQLite)."),
    metrics_port: int | None = typer.Option(
        None, min=1, max=65535, help="Serve Temporal's and Pressroom's metrics for Prometheus "
                                     "on 0.0.0.0:PORT/metrics (default: "
                                     "$PRESSROOM_METRICS_PORT, else none)."),
    health_port: str | None = typer.Option(
        None, metavar="[HOST:]PORT",
        help="Serve GET /healthz and /readyz on PORT (127.0.0.1) or HOST:PORT, e.g. "
             "0.0.0.0:8081 in a container (default: $PRESSROOM_HEALTH_PORT, else none)."),
    tracing: bool | None = typer.Option(
        None, "--tracing/--no-tracing", help="OpenTelemetry spans over OTLP/HTTP (default: "
                                            "$PRESSROOM_TRACING)."),
    log_format: str | None = typer.Option(
        None, help="Log lines: text or json (default: $PRESSROOM_LOG_FORMAT, else text)."),
    helper_processes: int | None = typer.Option(
        None, min=0, help="Processes running context assembly (default: "
                          "$PRESSROOM_HELPER_PROCESSES, else 1 on a multi-core machine)."),
    source_root: _SourceRoots = None,
    publish_root: _PublishRoots = None,
    tenant_source_root: _TenantRoots = None,
    tenant_publish_root: _TenantPublishRoots = None,
    registered_reviewers_only: _RegisteredOnly = False,
    drain_seconds: float | None = typer.Option(
        None, min=0, help="On SIGTERM/Ctrl-C, seconds running activities get to finish "
                          "before they are handed back (default: "
                          "$PRESSROOM_WORKER_DRAIN_SECONDS, else 20)."),
    identity: str | None = typer.Option(
        None, help="This worker's name in workflow histories (default pid@host)."),
) -> None:
    """Join an existing Temporal cluster as a Pressroom worker (runs until Ctrl-C or SIGTERM,
    then drains)."""
    from client.connection import where
    from settings import parse_health_address
    from worker import run_worker, with_observability

    try:
        health_address = parse_health_address(health_port) if health_port else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--health-port") from None
    settings = with_observability(
        _with_tenants(_with_roots(_settings(ctx), source_root, publish_root),
                      tenant_source_root, tenant_publish_root, registered_reviewers_only),
        metrics_port=metrics_port, tracing=tracing, log_format=log_format,
        health_address=health_address)
    console.print(f"pressroom worker → {where(settings, address=address, namespace=namespace)}, "
                  f"queue {_queue(task_queue, settings)!r}")
    console.print("  source roots: " + ", ".join(map(str, settings.source_root_paths()))
                  + "\n  publish roots: " + ", ".join(map(str, settings.publish_root_paths())),
                  highlight=False, soft_wrap=True)
    for tenant in sorted({*settings.tenant_source_roots, *settings.tenant_publish_roots}):
        console.print(f"  tenant {tenant}: source roots "
                      + (", ".join(map(str, settings.tenant_source_roots.get(tenant, ())))
                         or "none") + "; publish roots "
                      + (", ".join(map(str, settings.tenant_publish_roots.get(tenant, ())))
                         or "none"), highlight=False, soft_wrap=True)
    if settings.registered_reviewers_only:
        console.print(f"  reviewers: only keys registered in {settings.reviewers_dir}",
                      highlight=False, soft_wrap=True)
    _job_cmd(run_worker(settings, address=address, namespace=namespace,
                        task_queue=_queue(task_queue, settings), store_url=store_url,
                        tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca,
                        helper_processes=helper_processes, drain_seconds=drain_seconds,
                        identity=identity), settings)


@app.command()
def run(
    ctx: typer.Context,
    job_file: Annotated[Path, typer.Argument(help="The job spec (YAML).")],
    wait: bool = typer.Option(False, "--wait", help="Follow the stages until review/blocked/end "
                              "(every stage, however quick); exit with the job's code."),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
    timeout: float | None = typer.Option(
        None, "--timeout", min=0.0,
        help="With --wait: stop waiting after this many seconds (default: no limit). A worker "
             "outage is waited through; nobody polling at the end is exit code 7."),
) -> None:
    """Validate JOB_FILE and start the job (workflow id = job id; an existing id is refused).

    Every path the job names must lie inside the roots of the workers on its task queue: one
    of them checks the spec before it starts (a refusal names the flag and folder that
    would allow it); with no worker answering, it starts and the paths are checked when a
    worker picks it up. With --wait the exit code is the
    job's (README.md, "Scripting": 0 published or still running, 3 blocked, 4 awaiting
    review, 5 ended unpublished, 6 needs an operator, 7 no worker polls its task queue)."""
    from cli import commands

    if timeout is not None and not wait:
        raise typer.BadParameter("--timeout is how long --wait waits; give --wait too",
                                 param_hint="--timeout")
    settings = _settings(ctx)
    report = _job_cmd(commands.run(_out(as_json, progress=True), settings, job_file, wait=wait,
                                   task_queue=_queue(task_queue, settings), address=address,
                                   timeout=timeout, live_view=not as_json),
                      settings)
    if as_json:
        _print_json(report)
    raise typer.Exit(report.job.exit_code if report.job is not None else 0)


@app.command()
def check(
    ctx: typer.Context,
    job_file: Annotated[Path, typer.Argument(help="The job spec (YAML).")],
    source_roots: _SourceRoots = None,
    publish_roots: _PublishRoots = None,
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Check JOB_FILE offline, without Temporal, writing nothing: the schema, every path
    against the operator's roots, the reviewers against the registry, the provider, adapter,
    endpoint (PRESSROOM_MODEL_ENDPOINTS) and model key, the policy, the topics. One line per
    problem naming the field; exit 0 if there is none, else 1. `pressroom run` runs the
    same checks first."""
    from cli import commands

    settings = _with_roots(_settings(ctx), source_roots, publish_roots)
    report = _job_cmd(_sync(lambda: commands.check_job_file(settings, job_file, os.environ)),
                      settings)
    if as_json:
        _print_json(report)
    elif report.ok:
        console.print(f"{job_file}: ok", highlight=False, soft_wrap=True)
    for problem in report.problems if not as_json else ():
        err_console.print(f"{job_file}: {problem.line()}", highlight=False, soft_wrap=True,
                          markup=False)
    raise typer.Exit(0 if report.ok else 1)


async def _sync(body: Any) -> Any:
    """``body()`` as a coroutine, so ``_job_cmd`` turns its typed errors into one line."""
    return body()


@app.command()
def init(
    ctx: typer.Context,
    question: Annotated[str, typer.Option("--question", help="What the article answers.")],
    repo: Annotated[list[str] | None, typer.Option(
        "--repo", metavar="PATH[@REF]",
        help="A git repository to read (repeatable); the ref (default HEAD) is pinned to "
             "the commit it names now, as `pressroom run` pins it.")] = None,
    docs: Annotated[list[str] | None, typer.Option(
        "--docs", metavar="DIR", help="A folder (or file) of documents (repeatable).")] = None,
    page: Annotated[list[str] | None, typer.Option(
        "--page", metavar="FILE[=URL]",
        help="A saved web page and the URL it came from (repeatable).")] = None,
    reviewer: Annotated[list[str] | None, typer.Option(
        "--reviewer", metavar="NAME",
        help="A reviewer (repeatable; register the key first: `pressroom reviewer keygen "
             "NAME --register`).")] = None,
    output: Annotated[Path, typer.Option("--output", help="Where to write it.")] = Path(
        "job.yaml"),
    destination: Annotated[Path | None, typer.Option(
        "--destination", help="Where the article is published (default "
                              "$PRESSROOM_HOME/published).")] = None,
    job_id: Annotated[str | None, typer.Option(
        "--job-id", help="The job id (default: from the question).")] = None,
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT if it exists."),
) -> None:
    """Write a commented, valid job spec from these flags (topics suggested from the
    question's content words); `pressroom check` accepts it. An existing file is refused
    unless --force."""
    from cli.scaffold import InitRequest, write_spec

    settings = _settings(ctx)
    request = InitRequest(question=question, repos=repo or (), docs=docs or (),
                          pages=page or (), reviewers=reviewer or (), destination=destination,
                          job_id=job_id, locations=settings.locations)
    data = _job_cmd(write_spec(request, output, force=force, base=Path.cwd(),
                               home=settings.home,
                               report=lambda line: console.print(line, highlight=False)),
                    settings)
    console.print(f"wrote {output} (job {data['job_id']}); next: `pressroom check {output}`",
                  highlight=False, soft_wrap=True)


@app.command()
def status(ctx: typer.Context, job: str,
           address: str | None = typer.Option(None, help=_ADDR_HELP),
           as_json: bool = typer.Option(False, "--json", help=_JSON_HELP)) -> None:
    """Show a job's status, stage, pending draft, manifests and receipt. Exit code: 0
    published or running, 3 blocked, 4 awaiting review, 5 ended unpublished, 6 needs an
    operator, 7 running but no worker polls its task queue (README.md, "Scripting")."""
    from cli import commands

    settings = _settings(ctx)
    view = _job_cmd(commands.show_status(_out(as_json), settings, job, address), settings)
    report = commands.job_report(view)
    if as_json:
        _print_json(report)
    raise typer.Exit(report.exit_code)


@app.command()
def watch(ctx: typer.Context, job: str,
          address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Follow a job live until it needs a human or ends: stage, research turn k of the
    limit, tokens and cost against the budgets, the last tool calls, a blocked reason with
    the `resolve` actions it allows (a live view on a terminal, plain lines otherwise).
    Exit code: as `status`."""
    from cli import commands
    from cli.watch import watch as watch_job

    settings = _settings(ctx)

    async def body() -> Any:
        client = await commands.connect(settings, address)
        return await watch_job(console, client, job,
                               worker_grace=settings.worker_grace_seconds)

    view = _job_cmd(body(), settings)
    raise typer.Exit(commands.exit_code(view))


_STATUSES = ("running", "blocked", "awaiting_review", "published", "rejected", "expired",
             "failed", "cancelled", "needs_operator")


@app.command("list")
def list_jobs(
    ctx: typer.Context,
    status: str | None = typer.Option(None, help="Only jobs in this Pressroom status: "
                                      + ", ".join(_STATUSES) + "."),
    reviewer: str | None = typer.Option(None, help="Only jobs listing this reviewer."),
    tenant: str | None = typer.Option(None, help="Only this tenant's jobs."),
    limit: int = typer.Option(100, min=1, help="At most this many jobs."),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """List the jobs with their Pressroom status (one visibility query; a change shows a
    moment after it happened)."""
    from cli import commands
    from workflows.visibility import jobs_query

    if status is not None and status not in _STATUSES:
        raise typer.BadParameter(f"{status!r} is not one of {', '.join(_STATUSES)}",
                                 param_hint="--status")
    try:
        jobs_query(reviewer=reviewer, status=status, tenant=tenant)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    settings = _settings(ctx)
    found = _job_cmd(commands.list_all(_out(as_json), settings, address, status=status,
                                       reviewer=reviewer, tenant=tenant, limit=limit),
                     settings)
    if as_json:
        _print_json(found)


def _reviewer(reviewer: str | None, settings: Settings) -> str:
    import getpass

    return reviewer or settings.reviewer or getpass.getuser()


def _account_key(settings: Settings, signer: str, key: Path | None,
                 password_stdin: bool) -> Ed25519PrivateKey | None:
    """The signing key of ``signer``'s review-console account, unlocked with its password,
    when the command is to sign with the account: ``--password-stdin`` was given, or no key
    file is named and none is at the default path while the account exists (the password is
    then asked on a terminal). ``None`` means the key file is used (``signing_key``).

    One key per name: the account's key is the one ``pressroom reviewer add`` registered and
    ``run`` pinned, so a decision signed with it verifies like the console's (SECURITY.md §8).
    """
    import getpass

    from contracts.signing import key_file_name
    from webconsole.accounts import AccountError, ReviewerAccounts

    def fail(message: str) -> typer.Exit:
        err_console.print(f"[red]error:[/red] {message}", soft_wrap=True, highlight=False)
        return typer.Exit(1)

    accounts = ReviewerAccounts(settings.console_accounts_dir)
    if not password_stdin:
        default = settings.keys_dir / f"{key_file_name(signer)}.key"
        named = key or settings.reviewer_key
        if named is not None or default.exists() or default.is_symlink():
            return None
        try:
            if not accounts.exists(signer):
                return None  # signing_key names the missing file and both ways to sign
        except AccountError as exc:
            raise fail(str(exc)) from None
        if not sys.stdin.isatty():
            raise fail(f"no key file for {signer!r}; to sign as the console account "
                       f"{signer!r} pass --password-stdin and the password on stdin")
        password = getpass.getpass(f"password of console account {signer}: ")
    else:
        if key is not None:
            raise fail("give --key or --password-stdin, not both")
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    try:
        return accounts.signing_key(signer, password)
    except AccountError as exc:
        raise fail(str(exc)) from None


_PASSWORD_STDIN_HELP = ("Sign with your review-console account's key, its password read as "
                        "one line on stdin (without a key file, a terminal asks for it).")
_REVIEWER_HELP = "Reviewer principal (default $PRESSROOM_REVIEWER or your user name)."
_KEY_HELP = ("Your Ed25519 private key, the one the job pinned for you (default "
             "$PRESSROOM_REVIEWER_KEY or $PRESSROOM_HOME/keys/NAME.key).")
_SIGNER_HELP = ("Who signs: a listed reviewer or operator (default $PRESSROOM_REVIEWER or "
                "your user name).")
_DRAFT_HASH_HELP = "Only if the pending draft has this content hash (sha256:…); for scripts."


@app.command()
def approve(ctx: typer.Context, job: str,
            reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
            key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
            draft_hash: str | None = typer.Option(None, "--draft-hash", help=_DRAFT_HASH_HELP),
            yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
            password_stdin: bool = typer.Option(False, "--password-stdin",
                                                help=_PASSWORD_STDIN_HELP),
            address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Show the pending draft and approve it for publication (signed with your key)."""
    from cli import commands

    settings = _settings(ctx)
    name = _reviewer(reviewer, settings)
    _job_cmd(commands.review(console, settings, job, "approve", reviewer=name, comments=[],
                             yes=yes, address=address, key_path=key, draft_hash=draft_hash,
                             key=_account_key(settings, name, key, password_stdin)), settings)


@app.command("request-changes")
def request_changes(
    ctx: typer.Context,
    job: str,
    message: Annotated[list[str], typer.Option("-m", "--message", help="A requested change.")],
    reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
    key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
    draft_hash: str | None = typer.Option(None, "--draft-hash", help=_DRAFT_HASH_HELP),
    yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help=_PASSWORD_STDIN_HELP),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
) -> None:
    """Send the pending draft back with comments (the next turns see them as reviewer data)."""
    from cli import commands

    settings = _settings(ctx)
    name = _reviewer(reviewer, settings)
    _job_cmd(commands.review(console, settings, job, "request_changes", reviewer=name,
                             comments=message, yes=yes, address=address, key_path=key,
                             draft_hash=draft_hash,
                             key=_account_key(settings, name, key, password_stdin)), settings)


@app.command()
def reject(ctx: typer.Context, job: str,
           reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
           key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
           draft_hash: str | None = typer.Option(None, "--draft-hash", help=_DRAFT_HASH_HELP),
           yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
           password_stdin: bool = typer.Option(False, "--password-stdin",
                                               help=_PASSWORD_STDIN_HELP),
           address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Reject the pending draft; the job ends 'rejected' and nothing is published."""
    from cli import commands

    settings = _settings(ctx)
    name = _reviewer(reviewer, settings)
    _job_cmd(commands.review(console, settings, job, "reject", reviewer=name, comments=[],
                             yes=yes, address=address, key_path=key, draft_hash=draft_hash,
                             key=_account_key(settings, name, key, password_stdin)), settings)


@app.command("approve-call")
def approve_call(ctx: typer.Context, job: str, call_id: str,
                 reviewer: str | None = typer.Option(None, "--as", help=_REVIEWER_HELP),
                 key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
                 yes: bool = typer.Option(False, "--yes", help="Do not ask; for scripts."),
                 password_stdin: bool = typer.Option(False, "--password-stdin",
                                                     help=_PASSWORD_STDIN_HELP),
                 reject: bool = typer.Option(False, "--reject",
                                             help="Refuse the call instead: it never runs."),
                 reason: str = typer.Option("", "--reason",
                                            help="Why (with --reject; the model sees it)."),
                 address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Show a call of an `effect: write` MCP tool waiting for approval (its tool and
    arguments) and approve exactly that call, signed with your key; it then runs once
    (docs/mcp.md). With --reject, refuse it: it never runs. `pressroom status JOB` lists
    the waiting calls."""
    from cli import commands

    if reason and not reject:
        raise typer.BadParameter("--reason goes with --reject", param_hint="--reason")
    settings = _settings(ctx)
    name = _reviewer(reviewer, settings)
    _job_cmd(commands.approve_call(console, settings, job, call_id, reviewer=name, yes=yes,
                                   address=address, key_path=key,
                                   key=_account_key(settings, name, key, password_stdin),
                                   reject=reject, reason=reason),
             settings)


@app.command()
def resolve(
    ctx: typer.Context,
    job: str,
    add_source: str | None = typer.Option(
        None, help="A source to add, as YAML/JSON (e.g. '{kind: document, name: n, path: p}')."),
    refresh: str | None = typer.Option(
        None, "--refresh", "--refresh-source",
        help="Name of a source to re-acquire (a live web page is fetched again: a new "
             "revision)."),
    budget: int | None = typer.Option(None, help="New evidence budget (tokens)."),
    context_limit: int | None = typer.Option(None, help="New model context budget (tokens)."),
    accept: str | None = typer.Option(None, help="Accept a revision: CANONICAL_KEY=REVISION."),
    token_budget: int | None = typer.Option(
        None, help="New research token budget (input + output tokens over all turns)."),
    cost_budget: str | None = typer.Option(
        None, metavar="USD",
        help="New research cost budget in USD (e.g. 5 or 0.25; the worker's prices)."),
    accept_gathered: bool = typer.Option(
        False, "--accept-gathered", help="Stop researching and draft from what was gathered."),
    abandon: bool = typer.Option(
        False, "--abandon", help="End the job failed with its reason; nothing is published."),
    note: str = typer.Option("", help="Why (recorded with the resolution)."),
    signer: str | None = typer.Option(None, "--as", help=_SIGNER_HELP),
    key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
    password_stdin: bool = typer.Option(False, "--password-stdin", help=_PASSWORD_STDIN_HELP),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
) -> None:
    """Unblock a blocked job (add/refresh a source, raise the budget, accept a revision), or
    answer one that needs an operator: no option retries the failed step, --abandon ends it."""
    from cli import commands

    settings = _settings(ctx)
    name = _reviewer(signer, settings)
    _job_cmd(commands.resolve(console, settings, job, dict(
        add_source=add_source, refresh=refresh, budget=budget, context_limit=context_limit,
        accept=accept, token_budget=token_budget, accept_gathered=accept_gathered,
        abandon=abandon, note=note, cost_budget=cost_budget),
        address, signer=name, key_path=key,
        key=_account_key(settings, name, key, password_stdin)), settings)


_EXPLAIN_DIFF_USAGE = "explain --diff JOB_A --turn N JOB_B --turn M"


def _usage_error(message: str) -> typer.Exit:
    """A usage error as one line on stderr; exit code 2."""
    err_console.print(f"[red]usage:[/red] {message}", soft_wrap=True, highlight=False)
    return typer.Exit(2)


@app.command()
def explain(ctx: typer.Context, job: str,
            step: str | None = typer.Option(None, help="Only this step or stage."),
            turn: Annotated[list[int] | None, typer.Option(
                "--turn", help="Only this research turn's manifest; with --diff JOB_A give it "
                               "twice: JOB_A's turn, then JOB's.")] = None,
            diff: str | None = typer.Option(None, "--diff", metavar="JOB_A",
                                            help="Compare JOB_A's --turn N with JOB's --turn "
                                                 f"M, item by item ({_EXPLAIN_DIFF_USAGE})."),
            address: str | None = typer.Option(None, help=_ADDR_HELP),
            as_json: bool = typer.Option(False, "--json", help=_JSON_HELP)) -> None:
    """Show the job's context manifests: included and excluded items with their reasons and
    security flags, partitions, transforms, a fork's inherited items; repeated notes (cache,
    anomalies) once. With --diff JOB_A: what entered, left or changed between two turns'
    sealed requests, and the token and cost difference."""
    from cli import commands

    settings = _settings(ctx)
    turns = turn or []
    if diff is not None:
        from cli import fork_command

        if len(turns) != 2 or step is not None:
            raise _usage_error(f"{_EXPLAIN_DIFF_USAGE}: --diff takes exactly two --turn "
                               f"(got {len(turns)}){' and no --step' if step else ''}")
        report: Any = _job_cmd(fork_command.diff_command(
            _out(as_json), settings, diff, turns[0], job, turns[1], address), settings)
    else:
        if len(turns) > 1:
            raise _usage_error(f"explain JOB --turn N takes one --turn (got {len(turns)}); "
                               f"two are for {_EXPLAIN_DIFF_USAGE}")
        report = _job_cmd(commands.explain(_out(as_json), settings, job, step, address,
                                           turn=turns[0] if turns else None), settings)
    if as_json:
        _print_json(report)


@app.command()
def fork(
    ctx: typer.Context, job: str,
    at_turn: int = typer.Option(..., "--at-turn", min=1, help="The parent's research turn."),
    new_id: str = typer.Option(..., "--as", help="The fork's job id."),
    add_source: Annotated[list[str] | None,
                      typer.Option(help="A source to add, as YAML/JSON.")] = None,
    refresh_source: Annotated[list[str] | None,
                      typer.Option(help="A source to refresh first.")] = None,
    drop_source: Annotated[list[str] | None,
                      typer.Option(help="A source to drop (and its notes).")] = None,
    drop_note: Annotated[list[str] | None,
                      typer.Option(help="A note id (or note call id) to drop.")] = None,
    plan: Annotated[Path | None, typer.Option(help="A file replacing the agent's plan.")] = None,
    question: str | None = typer.Option(None, help="A new research question."),
    token_budget: int | None = typer.Option(None, help="The fork's token budget."),
    cost_budget: str | None = typer.Option(None, metavar="USD", help="The fork's cost budget."),
    signer: str | None = typer.Option(None, "--signer", help=_SIGNER_HELP),
    key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
    password_stdin: bool = typer.Option(False, "--password-stdin", help=_PASSWORD_STDIN_HELP),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
    address: str | None = typer.Option(None, help=_ADDR_HELP),
) -> None:
    """Start a new job from JOB's state after research turn N, with signed edits."""
    from cli import fork_command

    settings = _settings(ctx)
    name = _reviewer(signer, settings)
    status = _job_cmd(fork_command.fork_command(
        settings, job, turn=at_turn, new_id=new_id, add_sources=add_source or [],
        refresh_sources=refresh_source or [], drop_sources=drop_source or [],
        drop_notes=drop_note or [],
        plan=plan, question=question, token_budget=token_budget, cost_budget=cost_budget,
        signer=name, key_path=key, key=_account_key(settings, name, key, password_stdin),
        task_queue=_queue(task_queue, settings), address=address), settings)
    console.print(f"forked {job} at turn {at_turn} as {new_id}: {status.stage}, "
                  f"{status.status}", highlight=False)
    # what a user does next: follow the fork, then see what the edits changed in what the
    # model saw (docs/architecture.md#forking-a-job: compare turn N+1 with turn N+1)
    console.print(f"  follow it:  pressroom watch {new_id}\n"
                  f"  compare:    pressroom explain --diff {job} --turn {at_turn + 1} "
                  f"{new_id} --turn {at_turn + 1}", highlight=False, markup=False,
                  soft_wrap=True)


@app.command()
def trace(ctx: typer.Context, job: str,
          address: str | None = typer.Option(None, help=_ADDR_HELP),
          as_json: bool = typer.Option(False, "--json", help=_JSON_HELP)) -> None:
    """Print the research turns: each turn's tokens and tool calls with their results' sizes."""
    from cli import commands

    settings = _settings(ctx)
    report = _job_cmd(commands.trace(_out(as_json), settings, job, address), settings)
    if as_json:
        _print_json(report)


@app.command()
def cancel(ctx: typer.Context, job: str,
           reason: str = typer.Option("", help="Why (recorded with the cancel)."),
           signer: str | None = typer.Option(None, "--as", help=_SIGNER_HELP),
           key: Annotated[Path | None, typer.Option("--key", help=_KEY_HELP)] = None,
           password_stdin: bool = typer.Option(False, "--password-stdin",
                                               help=_PASSWORD_STDIN_HELP),
           address: str | None = typer.Option(None, help=_ADDR_HELP)) -> None:
    """Cancel a running job, signed as a listed reviewer or operator (nothing is published)."""
    from cli import commands

    settings = _settings(ctx)
    name = _reviewer(signer, settings)
    _job_cmd(commands.cancel(console, settings, job, address, signer=name, key_path=key,
                             reason=reason,
                             key=_account_key(settings, name, key, password_stdin)), settings)


# --- reviewer keys: `pressroom reviewer keygen` ---

reviewer_app = typer.Typer(help="Reviewer keys that sign decisions (SECURITY.md).",
                           no_args_is_help=True)
app.add_typer(reviewer_app, name="reviewer")


@reviewer_app.command("keygen")
def reviewer_keygen(
    ctx: typer.Context,
    name: str,
    out: Annotated[Path | None, typer.Option(
        help="Where to write the private key (default $PRESSROOM_HOME/keys/NAME.key).")] = None,
    register: bool = typer.Option(
        False, "--register",
        help="Also add the public key to the reviewer registry ($PRESSROOM_HOME/reviewers), "
             "which `pressroom run` pins name-only reviewers from."),
) -> None:
    """Make an Ed25519 key pair: the private key is written 0600; the public key is printed."""
    from cli.reviewer_keys import keygen
    from contracts.errors import JobError

    settings = _settings(ctx)
    try:
        made = keygen(settings, name, out=out, register=register)
    except JobError as exc:
        err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(1) from None
    console.print(f"private key {made.private_key} (mode 0600; keep it secret)",
                  highlight=False, soft_wrap=True)
    if made.registered is not None:
        console.print(f"registered {made.registered}", highlight=False, soft_wrap=True)
    console.print(f"list in a job spec: {{name: {name}, public_key: {made.public_key}}}",
                  highlight=False, soft_wrap=True)
    print(made.public_key)


@reviewer_app.command("add")
def reviewer_add(
    ctx: typer.Context,
    name: str,
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the password as one line on stdin instead of "
                                        "asking twice."),
    replace: bool = typer.Option(
        False, "--replace", help="Replace an existing account and its registry entry (a new "
                                 "signing key: jobs pinned to the old one must be resubmitted)."),
) -> None:
    """Create a review-console account: a password (at least 12 characters) and a new signing
    key stored encrypted under it ($PRESSROOM_HOME/console/accounts); the public key is
    registered ($PRESSROOM_HOME/reviewers) so `pressroom run` pins it, and printed."""
    import getpass

    from contracts import reviewer_registry
    from webconsole.accounts import AccountError, ReviewerAccounts, register_public_key

    settings = _settings(ctx)
    accounts = ReviewerAccounts(settings.console_accounts_dir)

    def fail(message: str) -> typer.Exit:
        err_console.print(f"[red]error:[/red] {message}", soft_wrap=True, highlight=False)
        return typer.Exit(1)

    registry = settings.reviewers_dir
    from cli.reviewer_keys import known_names
    from contracts.names import NameRefused, check_name

    try:
        check_name(name, known_names(settings))
    except NameRefused as exc:
        raise fail(str(exc)) from None
    try:
        if not replace and accounts.exists(name):
            raise fail(f"reviewer account {name!r} already exists (pass --replace for a new "
                       "password and key)")
    except AccountError as exc:
        raise fail(str(exc)) from None
    if password_stdin:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    else:
        password = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("again: ") != password:
            raise fail("the two passwords differ")
    try:
        entry = reviewer_registry.entry_path(registry, name)
        if not replace and reviewer_registry.entry_exists(registry, name):
            raise fail(f"{entry} already registers a key for {name!r} (from `reviewer keygen "
                       "--register`?); pass --replace to register the account's key instead")
        public = accounts.add(name, password, replace=replace)
        registered = register_public_key(registry, name, public, replace=replace)
    except AccountError as exc:
        raise fail(str(exc)) from None
    console.print(f"account {name} in {settings.console_accounts_dir} (signing key encrypted "
                  "under the password)", highlight=False, soft_wrap=True)
    console.print(f"registered {registered}", highlight=False, soft_wrap=True)
    print(public)


# --- artifact store: `pressroom selfcheck`, `pressroom db …` (migrations, attestation keys) ---

db_app = typer.Typer(help="Manage the artifact store's database schema (Alembic migrations).",
                     no_args_is_help=True)
app.add_typer(db_app, name="db")

_URL_HELP = ("Database URL (sqlite+aiosqlite:///path or postgresql+asyncpg://user@host/db); "
             "default: $PRESSROOM_DATABASE_URL or $PRESSROOM_HOME/pressroom.db")


def _migrate(direction: str, revision: str, url: str) -> None:
    import asyncio

    from artifacts import StoreError
    from artifacts.database import connect, redact
    from artifacts.migrate import current_revision, downgrade, upgrade

    async def run() -> tuple[str | None, str | None]:
        db = await connect(url)
        try:
            before = await current_revision(db)
            step = upgrade if direction == "upgrade" else downgrade
            return before, await step(db, revision)
        finally:
            await db.dispose()

    try:
        before, after = asyncio.run(run())
    except StoreError as exc:
        err_console.print(f"[red]{type(exc).__name__}:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    except Exception as exc:  # alembic reports unknown revisions with its own errors
        err_console.print(f"[red]{direction} to {revision!r} failed:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"{redact(url)}: schema {before or 'empty'} → "
                  f"{after or 'empty'}", soft_wrap=True)


@db_app.command("upgrade")
def db_upgrade(
    ctx: typer.Context,
    revision: str = typer.Argument("head", help="Target revision (default: head)."),
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Migrate the store's schema up (servers run this; SQLite also migrates on first use)."""
    _migrate("upgrade", revision, url or _settings(ctx).store_url)


@db_app.command("downgrade")
def db_downgrade(
    ctx: typer.Context,
    revision: str = typer.Argument(..., help="Target revision; 'base' drops every table."),
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Migrate the store's schema down to REVISION."""
    _migrate("downgrade", revision, url or _settings(ctx).store_url)


@db_app.command("attestation-key")
def db_attestation_key(
    ctx: typer.Context,
    path: Annotated[Path | None, typer.Argument(
        help="The key file (default: $PRESSROOM_ATTESTATION_KEYS).")] = None,
    key_id: Annotated[str | None, typer.Option(
        "--key-id", help="Id of the new key (default: k1, k2, …).")] = None,
) -> None:
    """Create the attestation key file (mode 0600) or rotate it: a fresh key becomes the
    current one, which signs new artifact revisions; older keys stay to verify theirs.
    Restart the workers to use it. The secret is never printed."""
    from artifacts.attestation import AttestationKeyError, add_key

    target = path or _settings(ctx).attestation_keys
    if target is None:
        err_console.print("[red]no key file:[/red] name one, or set "
                          "PRESSROOM_ATTESTATION_KEYS", soft_wrap=True)
        raise typer.Exit(2)
    try:
        ring = add_key(target.expanduser(), key_id)
    except AttestationKeyError as exc:
        err_console.print(f"[red]AttestationKeyError:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    older = ", ".join(ring.key_ids[1:]) or "none"
    console.print(f"{target}: current key {ring.current_key_id} (older keys kept to verify: "
                  f"{older})", soft_wrap=True, highlight=False)


@db_app.command("sign-unsigned")
def db_sign_unsigned(
    ctx: typer.Context,
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Sign every artifact revision that has no attestation with the current key of
    $PRESSROOM_ATTESTATION_KEYS: you vouch for the store as it is now (run it once when
    first configuring a key on a store that already holds revisions)."""
    import asyncio

    from artifacts import StoreError, open_store
    from artifacts.attestation import AttestationKeyError, load_keyring
    from artifacts.database import redact

    settings = _settings(ctx)
    target, keys = url or settings.store_url, settings.attestation_keys
    if keys is None:
        err_console.print("[red]no key file:[/red] set PRESSROOM_ATTESTATION_KEYS",
                          soft_wrap=True)
        raise typer.Exit(2)

    async def run() -> int:
        store = await open_store(target, keyring=load_keyring(keys))
        try:
            return await store.sign_unsigned()
        finally:
            await store.close()

    try:
        signed = asyncio.run(run())
    except (StoreError, AttestationKeyError) as exc:
        err_console.print(f"[red]{type(exc).__name__}:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    console.print(f"{redact(target)}: signed {signed} unsigned revisions", soft_wrap=True)


@app.command()
def selfcheck(
    ctx: typer.Context,
    url: str | None = typer.Option(None, "--url", help=_URL_HELP),
) -> None:
    """Check the artifact store: put/get, conflicts, races, scoping, tamper detection."""
    import asyncio

    from rich.table import Table

    from artifacts.selfcheck import run_selfcheck

    settings = _settings(ctx)
    results = asyncio.run(run_selfcheck(url or settings.store_url,
                                        scratch_dir=settings.home / "selfcheck"))
    table = Table(title="Pressroom artifact store self-check")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    table.add_column("seconds", justify="right")
    for r in results:
        table.add_row(r.name, "[green]ok[/green]" if r.ok else "[red]FAILED[/red]", r.detail,
                      f"{r.seconds:.3f}")
    console.print(table)
    if not all(r.ok for r in results):
        raise typer.Exit(1)


@app.command()
def doctor(
    ctx: typer.Context,
    address: str | None = typer.Option(None, help=_ADDR_HELP),
    namespace: str | None = typer.Option(None, help="Temporal namespace (default: the "
                                         "connection settings')."),
    task_queue: str | None = typer.Option(None, help=_QUEUE_HELP),
    url: str | None = typer.Option(None, "--url", help="Artifact store URL (default: the "
                                   "settings')."),
    tls_cert: str | None = typer.Option(None, help="Client certificate (PEM) for mTLS."),
    tls_key: str | None = typer.Option(None, help="Client private key (PEM) for mTLS."),
    tls_ca: str | None = typer.Option(None, help="Server root CA (PEM)."),
    timeout: float = typer.Option(5.0, min=0.1, help="Seconds each check may take."),
    deadline: float = typer.Option(30.0, min=0.1, help="Seconds all checks may take."),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Check the connection to Temporal and the artifact store, one line per check: the
    connection options, server, namespace, search attributes, a worker polling, the store
    and its schema, the attestation key. Exits 1 when a check fails; changes nothing."""
    import asyncio

    from pydantic import TypeAdapter
    from rich.markup import escape

    from cli.doctor import Check, run_doctor
    from client.connection import TlsFlags

    settings = _settings(ctx)

    def report(check: Check) -> None:
        colour = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim"}[check.outcome]
        _out(as_json).print(f"[{colour}]{check.outcome:<4}[/{colour}]  {check.name:<18} "
                      f"{escape(check.detail)}", soft_wrap=True, highlight=False)

    checks = asyncio.run(run_doctor(
        settings, address=address, namespace=namespace, task_queue=task_queue,
        store_url=url, tls=TlsFlags(cert=tls_cert, key=tls_key, ca=tls_ca),
        per_check=timeout, deadline=deadline, report=report))
    failed = [c.name for c in checks if c.outcome == "fail"]
    if as_json:  # {"ok": …, "checks": [{"name", "outcome", "detail"}, …]}
        _print_json({"ok": not failed,
                     "checks": TypeAdapter(list[Check]).dump_python(checks, mode="json")})
    if failed:
        err_console.print(f"[red]error:[/red] pressroom doctor: {len(failed)} check(s) "
                          f"failed: {', '.join(failed)}", soft_wrap=True, highlight=False)
        raise typer.Exit(1)


@app.command()
def version() -> None:
    """Print Pressroom's version."""
    from importlib.metadata import version as _v

    console.print(_v("pressroom"))


eval_app = typer.Typer(help="Measure Pressroom's machinery against fixed datasets.",
                       no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("context")
def eval_context(
    cases: str | None = typer.Option(None, help="Cases JSONL (default: the bundled dataset)."),
    sources: str | None = typer.Option(None, help="Sources JSONL (default: bundled dataset)."),
    policy: str = typer.Option("default", help="Context policy: default, strict or a YAML path."),
    budget: int | None = typer.Option(None, help="Replace every case's evidence budget."),
    output: str = typer.Option("reports/context", help="Directory for the reports."),
    baseline: str = typer.Option(
        "strongest", help="Baseline the gate compares against: strongest, dump-all, "
                          "gated-dump or top-k."),
    top_k: int = typer.Option(3, "--top-k", help="k of the top-k baseline."),
    topics: str = typer.Option(
        "both", help="Topic modes: labels (declared source topics count as coverage), "
                     "content (they are dropped; coverage comes from the content) or both."),
) -> None:
    """Compare the baselines with the context engine; exit 0 gate pass, 1 gate fail, 2 bad
    input."""
    from evals.context_lab.command import run_command
    from evals.context_lab.runner import BUNDLED_CASES, BUNDLED_SOURCES

    code = run_command(cases=Path(cases) if cases else BUNDLED_CASES,
                       sources=Path(sources) if sources else BUNDLED_SOURCES,
                       policy=policy, budget=budget, output=Path(output), console=console,
                       err_console=err_console, baseline=baseline, top_k=top_k,
                       topics=topics)
    raise typer.Exit(code)


@eval_app.command("agent")
def eval_agent(
    questions: str | None = typer.Option(
        None, help="Questions YAML (default: the bundled evals/agent/questions.yaml)."),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
    articles: bool = typer.Option(False, "--articles", help="Also print each article."),
) -> None:
    """Run the offline research agent's quality eval (real jobs on an embedded dev server);
    exit 0 gate pass, 1 gate fail, 2 bad input."""
    from evals.agent_lab.command import run_command
    from evals.agent_lab.dataset import BUNDLED_QUESTIONS

    raise typer.Exit(run_command(questions=Path(questions) if questions else BUNDLED_QUESTIONS,
                                 as_json=as_json, articles=articles, console=console,
                                 err_console=err_console))


def main() -> None:
    """The console script: ``app()``, then an exit that skips interpreter teardown once a
    Temporal client was used.

    The SDK's Rust core keeps threads that may still release Python objects while a
    short-lived process finalizes, which aborts it ("PyGILState_Release: thread state
    must be current", temporalio/sdk-python#300) — seen here on ``pressroom status`` of
    an unknown job under load. Every command has finished its work, closed its stores and
    printed by then, so the streams are flushed and the process leaves with its code.
    """
    import os

    try:
        app(obj=_read_settings())
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message"): Python prints it and exits 1
            print(exc.code, file=sys.stderr)
            code = 1
    if "temporalio.bridge.client" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
