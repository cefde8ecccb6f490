"""MCP servers as tool sources: the operator's server definitions and a job's grants.

Why two models: a job spec is written by whoever submits a job, and a job must never start a
command or reach a URL the operator did not define (SECURITY.md, "11. MCP servers"). So the
operator defines every server once (``PRESSROOM_MCP_SERVERS``: a YAML or JSON file read by
the worker, ``settings.Settings.mcp_servers``) — a stdio command with its arguments and
environment, or a streamable-HTTP URL whose headers are taken from named environment
variables of the worker, never written in the file — and marks a tool ``effect: write``
when calling it acts on the world. A job only names defined servers and which of their
tools it may use (``JobSpec.tools``, ``ToolGrant``); ``check_grants`` refuses anything
else in one line (``McpGrantRefused``, a ``JobSpecError``: permanent), at submit through
the worker's path check and again when the worker stores the spec.

The model sees a granted tool as ``mcp__<server>__<tool>`` (``tool_name``): server names
hold no ``__`` so the name splits back unambiguously (``split_tool_name``), and a full
name fits the 64 characters providers allow for a tool name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from contracts.errors import JobSpecError

#: a server's name: lower-case words joined by single hyphens (no ``_``, so ``__`` in a
#: tool's full name can only be the separator)
SERVER_NAME = r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$"
MAX_SERVER_NAME = 16
#: an MCP tool name as the model may call it (providers allow ``[A-Za-z0-9_-]{1,64}``)
TOOL_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
MAX_TOOL_NAME = 64 - len("mcp____") - MAX_SERVER_NAME
PREFIX = "mcp__"
_ENV_NAME = r"^[A-Z_][A-Z0-9_]*$"
#: an HTTP header name (RFC 9110 token)
_HEADER = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"


class McpConfigError(ValueError):
    """The operator's MCP server file cannot be used; one line naming the file and field."""


class McpGrantRefused(JobSpecError):
    """A job's ``tools`` grant names something the operator did not define."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class McpToolPolicy(_Model):
    """What the operator says about one tool: ``write`` tools act on the world."""

    effect: Literal["read", "write"] = "read"


class McpServerSpec(_Model):
    """One server the operator defined: exactly one of ``command`` (stdio) or ``url``
    (streamable HTTP). ``tools``, when given, is the only tools a job may be granted."""

    command: str | None = Field(default=None, min_length=1, max_length=4096)
    args: list[str] = Field(default_factory=list, max_length=100)
    #: the child's environment besides a minimal one (``PATH``, ``HOME``, locale)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = Field(default=None, max_length=2000)
    #: HTTP header name -> the worker's environment variable holding its value
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    tools: dict[str, McpToolPolicy] = Field(default_factory=dict)
    #: one call's deadline, the tool list's, and the most characters of text a result may
    #: hold (a larger one is a ``tool_output_too_large`` error, never cut silently)
    call_timeout_s: float = Field(default=30.0, gt=0, le=600)
    list_timeout_s: float = Field(default=20.0, gt=0, le=600)
    max_result_chars: int = Field(default=20_000, ge=1, le=1_000_000)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (stdio) or url (streamable HTTP)")
        if self.url is not None:
            if not re.match(r"^https?://[^\s/]+", self.url):
                raise ValueError("url must be an http:// or https:// URL")
            if self.args or self.env or self.cwd:
                raise ValueError("args, env and cwd are for a stdio command, not a url")
        if self.command is not None and self.headers_from_env:
            raise ValueError("headers_from_env is for a url, not a stdio command")
        for name, var in self.headers_from_env.items():
            if not re.match(_HEADER, name) or not re.match(_ENV_NAME, var):
                raise ValueError(f"headers_from_env: {name[:40]!r} must be a header name "
                                 "mapped to an environment variable name")
        for tool in self.tools:
            if not re.match(TOOL_NAME, tool) or len(tool) > MAX_TOOL_NAME:
                raise ValueError(f"tools: {tool[:80]!r} is not a tool name of at most "
                                 f"{MAX_TOOL_NAME} characters [A-Za-z0-9_-]")
        return self

    def effect_of(self, tool: str) -> Literal["read", "write"]:
        policy = self.tools.get(tool)
        return policy.effect if policy is not None else "read"


class McpServers(_Model):
    """The operator's servers by name (``PRESSROOM_MCP_SERVERS``)."""

    servers: dict[str, McpServerSpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names(self) -> McpServers:
        for name in self.servers:
            if not re.match(SERVER_NAME, name) or len(name) > MAX_SERVER_NAME:
                raise ValueError(f"servers: {name[:40]!r} is not a server name (lower-case "
                                 f"words joined by '-', at most {MAX_SERVER_NAME} characters)")
        return self


class ToolGrant(_Model):
    """Which tools of one operator-defined server a job may use. A job names servers; it
    can never define one (a ``command``, ``url`` or ``args`` here is refused)."""

    server: str = Field(min_length=1, max_length=MAX_SERVER_NAME, pattern=SERVER_NAME)
    tools: list[str] = Field(min_length=1, max_length=50)

    @model_validator(mode="before")
    @classmethod
    def _no_definition(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            defined = sorted(k for k in ("command", "args", "env", "url", "headers",
                                         "headers_from_env") if k in value)
            if defined:
                raise ValueError(f"a job names an operator-defined server; it cannot give "
                                 f"{', '.join(defined)} (PRESSROOM_MCP_SERVERS defines servers)")
        return value

    @model_validator(mode="after")
    def _tool_names(self) -> ToolGrant:
        for tool in self.tools:
            if not re.match(TOOL_NAME, tool) or len(tool) > MAX_TOOL_NAME:
                raise ValueError(f"tools: {tool[:80]!r} is not an MCP tool name")
        if len(set(self.tools)) != len(self.tools):
            raise ValueError("tools: a tool is named twice")
        return self


def tool_name(server: str, tool: str) -> str:
    """The name the model calls: ``mcp__<server>__<tool>``."""
    return f"{PREFIX}{server}__{tool}"


def split_tool_name(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an ``mcp__<server>__<tool>`` name; ``None`` for any other."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name.removeprefix(PREFIX).partition("__")
    if not sep or not server or not tool:
        return None
    return server, tool


def arguments_sha256(arguments: Mapping[str, Any]) -> str:
    """The sha256 of a call's canonical arguments (sorted keys, no spaces, UTF-8): what an
    approval of an ``effect: write`` call is bound to."""
    text = json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def approval_body(call_id: str, server: str, tool: str,
                  arguments: Mapping[str, Any]) -> dict[str, object]:
    """What a reviewer signs to let one call of a write tool run: the call, the server,
    the tool and the sha256 of its canonical arguments (the job id is in the statement)."""
    return {"call_id": call_id, "server": server, "tool": tool,
            "arguments_sha256": arguments_sha256(arguments)}


def check_grants(grants: Sequence[ToolGrant], servers: McpServers | None) -> None:
    """Refuse (``McpGrantRefused``, one line) a grant of a server the operator did not
    define, or of a tool its definition does not offer (when it lists its tools)."""
    defined = servers.servers if servers is not None else {}
    seen: set[str] = set()
    for index, grant in enumerate(grants):
        where = f"tools[{index}]"
        if grant.server in seen:
            raise McpGrantRefused(f"{where}: server {grant.server!r} is granted twice")
        seen.add(grant.server)
        server = defined.get(grant.server)
        if server is None:
            raise McpGrantRefused(
                f"{where}: server {grant.server!r} is not defined by this worker's operator "
                f"(PRESSROOM_MCP_SERVERS); defined: {sorted(defined) or 'none'}")
        if server.tools:
            offered = [t for t in grant.tools if t not in server.tools]
            if offered:
                raise McpGrantRefused(
                    f"{where}: server {grant.server!r} offers no tool {offered[0]!r}; "
                    f"it offers {sorted(server.tools)}")


def parse_mcp_servers(data: object, *, origin: str = "<input>") -> McpServers:
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{origin}: expected a mapping with 'servers'")
    try:
        return McpServers.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "servers"
        raise McpConfigError(f"{origin}: {where}: {first['msg']}") from None


def load_mcp_servers(path: Path | None) -> McpServers | None:
    """The operator's server file (YAML, or JSON which YAML reads too); ``None`` without
    one. Errors quote no value of the file (it may hold a token in ``env``)."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise McpConfigError(f"cannot read MCP server file {path}: "
                             f"{getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        raise McpConfigError(f"MCP server file {path} is not valid "
                             f"{'JSON' if path.suffix == '.json' else 'YAML'}") from None
    return parse_mcp_servers(data, origin=str(path))


__all__ = [
    "PREFIX",
    "McpConfigError",
    "McpGrantRefused",
    "McpServerSpec",
    "McpServers",
    "McpToolPolicy",
    "ToolGrant",
    "approval_body",
    "arguments_sha256",
    "check_grants",
    "load_mcp_servers",
    "parse_mcp_servers",
    "split_tool_name",
    "tool_name",
]
