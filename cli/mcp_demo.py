"""``pressroom demo --example mcp``: the operator's side of the MCP example, played locally.

Why a module of its own: the MCP example (``examples/mcp_job.yaml``) needs what an operator
provides and a job never may (docs/mcp.md, "Who defines what"): the MCP server file the
worker reads (``PRESSROOM_MCP_SERVERS`` semantics, ``contracts.mcp_servers``) and web rules
that let the worker fetch the live page (``contracts.web_policy``). The demo provides
them for its own in-process worker only — the server file under ``$PRESSROOM_HOME``, the
loopback allow-list in a copy of the settings — and serves the page itself, on
``127.0.0.1``, so the example runs with no network beyond loopback.

* ``git``: ``mcp-server-git`` (a package dependency, run from this interpreter's ``bin``)
  confined to the fixture repository ``repos/httpkit`` that ``examples/build_fixtures.py``
  builds, started in that folder (the question's ``repo_path=./``); ``git_log`` and
  ``git_status`` read, ``git_commit`` is ``effect: write`` (the job is granted only
  ``git_log``).
* the page: the saved fixture ``web/retry-storms.html`` served at the URL's path by a
  ``ThreadingHTTPServer`` thread on an ephemeral loopback port; the spec's URL gets that
  port (``demo_job``).
"""

from __future__ import annotations

import contextlib
import http.server
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import yaml
from pydantic import BaseModel, ConfigDict

from contracts.errors import JobError
from contracts.job_spec import JobSpec
from contracts.mcp_servers import load_mcp_servers
from contracts.source_specs import WebPageSourceSpec
from settings import Settings

#: the fixture repository the git server reads, and the saved page served live
DEMO_REPO = Path("repos") / "httpkit"
DEMO_PAGE = Path("web") / "retry-storms.html"
SERVERS_FILE = "demo-mcp-servers.yaml"
#: loopback only: the demo's page server binds 127.0.0.1
LOOPBACK_DOMAINS = ("127.0.0.1",)
LOOPBACK_NETWORKS = ("127.0.0.0/8",)


class McpDemoSetup(BaseModel):
    """What the demo set up for its worker: the operator's server file and the repository
    the git server is confined to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    servers_file: Path
    repo: Path


def mcp_server_git() -> str:
    """The ``mcp-server-git`` command installed with Pressroom (beside this interpreter, or
    on ``PATH``); ``JobError`` when it is missing — nothing is downloaded at run time."""
    beside = Path(sys.executable).parent / "mcp-server-git"
    if beside.is_file():
        return str(beside)
    found = shutil.which("mcp-server-git")
    if found is None:
        raise JobError("mcp-server-git is not installed (a dependency of pressroom: "
                       "reinstall it, e.g. `make venv`)")
    return found


def write_servers_file(home: Path, repo: Path) -> Path:
    """The operator's MCP server file for the demo's worker, under ``home``; checked by the
    same loader the worker uses (``load_mcp_servers``)."""
    table = {"servers": {"git": {
        "command": mcp_server_git(),
        "args": ["--repository", str(repo)],
        "cwd": str(repo),
        "tools": {"git_log": {}, "git_status": {}, "git_commit": {"effect": "write"}},
        "call_timeout_s": 30, "list_timeout_s": 20,
    }}}
    path = home / SERVERS_FILE
    path.write_text("# written by `pressroom demo --example mcp` (cli/mcp_demo.py)\n"
                    + yaml.safe_dump(table, sort_keys=False), encoding="utf-8")
    load_mcp_servers(path)
    return path


def demo_settings(settings: Settings, servers_file: Path) -> Settings:
    """``settings`` for the demo's own worker: the server file, and web rules that allow
    loopback — explicitly, and for this demo only (an operator's worker allows nothing
    unless ``PRESSROOM_WEB_ALLOWED_DOMAINS`` / ``_NETWORKS`` say so)."""
    return settings.model_copy(update={"mcp_servers": servers_file,
                                       "web_allowed_domains": LOOPBACK_DOMAINS,
                                       "web_allowed_networks": LOOPBACK_NETWORKS})


def demo_job(spec: JobSpec, port: int) -> JobSpec:
    """``spec`` with each live page's URL on loopback at ``port`` (the demo's page server)."""
    sources = []
    for source in spec.sources:
        if isinstance(source, WebPageSourceSpec) and source.live:
            parts = urlsplit(source.url)
            source = source.model_copy(update={"url": urlunsplit(
                ("http", f"127.0.0.1:{port}", parts.path, parts.query, ""))})
        sources.append(source)
    return spec.model_copy(update={"sources": sources})


def page_url(spec: JobSpec) -> str:
    """The URL of the spec's live page (the one the demo serves)."""
    for source in spec.sources:
        if isinstance(source, WebPageSourceSpec) and source.live:
            return source.url
    raise JobError(f"job {spec.job_id!r} has no live web_page source to serve")


def page_path(spec: JobSpec) -> str:
    return urlsplit(page_url(spec)).path or "/"


class PageServer:
    """One page (``body`` at ``path``) served on ``127.0.0.1`` by a thread; every other path
    is 404. ``requests`` counts the page's fetches (the job fetches it once)."""

    def __init__(self, path: str, body: bytes) -> None:
        self.requests = 0
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                found = self.path.split("?", 1)[0] == path
                served.requests += found
                data = body if found else b"not found"
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8" if found
                                 else "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                del format, args  # the demo's output is the job's

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="pressroom-demo-page")


@contextlib.contextmanager
def serving(path: str, page: Path) -> Iterator[PageServer]:
    """Serve ``page`` at ``path`` on loopback until the block ends."""
    server = PageServer(path, page.read_bytes())
    server._thread.start()
    try:
        yield server
    finally:
        server._httpd.shutdown()
        server._httpd.server_close()


def setup(home: Path, fixtures: Path) -> McpDemoSetup:
    """Write the operator's server file for the demo (the fixtures built first)."""
    repo = fixtures / DEMO_REPO
    if not (repo / ".git").exists():
        raise JobError(f"the fixture repository {repo} is missing; run "
                       "examples/build_fixtures.py")
    return McpDemoSetup(servers_file=write_servers_file(home, repo), repo=repo)
