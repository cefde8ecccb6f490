"""Talking to one operator-defined MCP server with the official ``mcp`` SDK (v2).

Why a connection per operation: a call runs inside the ``run_tool`` activity, which may run
again on another worker after a crash; a session kept across activities would be state the
durable record does not hold. Each operation opens the server (a stdio child or a
streamable-HTTP session), does one thing under one deadline and closes it — the child is
killed on the way out, so a hung server costs one deadline, never a stuck worker.

Everything a server can do wrong becomes ``McpToolError`` with a one-word kind
(``activities.tool_errors``): past the deadline (``tool_timeout``), a server
that cannot be started or dies mid-call (``tool_unavailable``), a reply that is not valid
JSON-RPC or not a valid MCP result (``tool_protocol_error``), the tool's own error result
(``tool_reported_error``). The detail is one line, cut short and redacted by the caller;
never the server's stderr (it goes to ``/dev/null``: it may print the worker's
environment or a token).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from contracts.mcp_servers import McpServerSpec

_T = TypeVar("_T")

# The SDK logs a line it cannot parse with the line itself (a server's output, which may
# hold a secret); every failure here is reported as a typed, redacted error instead, so
# its own records stay out of the worker's log (SECURITY.md, "No secret in a request,
# manifest, history or log").
logging.getLogger("mcp").setLevel(logging.CRITICAL + 1)

#: the most pages of a tool list followed (a server that keeps handing out cursors stops
#: there with a protocol error)
MAX_LIST_PAGES = 20


class McpToolError(Exception):
    """One MCP operation failed; ``kind`` is a ``RejectionKind``, ``detail`` one line."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail[:300]


def _headers(server: McpServerSpec, environ: Mapping[str, str]) -> dict[str, str]:
    headers = {}
    for name, var in server.headers_from_env.items():
        value = environ.get(var)
        if not value:
            raise McpToolError("tool_unavailable",
                               f"header {name} needs the worker's variable {var}, unset")
        headers[name] = value
    return headers


class _Faults:
    """A transport fault the session hands to its message handler (a line of the server's
    output that is not JSON-RPC) ends the pending operation at once, as a protocol error,
    instead of leaving it to wait for its deadline."""

    def __init__(self) -> None:
        self.seen = anyio.Event()
        self.kind = ""

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.kind = type(message).__name__
            self.seen.set()

    async def watch(self, operation: Callable[[], Awaitable[_T]]) -> _T:
        outcome: list[_T] = []
        async with anyio.create_task_group() as group:
            async def run() -> None:
                outcome.append(await operation())
                group.cancel_scope.cancel()

            async def fault() -> None:
                await self.seen.wait()
                group.cancel_scope.cancel()

            group.start_soon(run)
            group.start_soon(fault)
        if not outcome:
            raise McpToolError("tool_protocol_error",
                               f"the server sent a message that is not JSON-RPC ({self.kind})")
        return outcome[0]


@contextlib.asynccontextmanager
async def _connected(server: McpServerSpec, environ: Mapping[str, str],
                     deadline: float) -> AsyncIterator[tuple[Client, _Faults]]:
    faults = _Faults()
    if server.command is not None:
        params = StdioServerParameters(command=server.command, args=list(server.args),
                                       env=dict(server.env) or None, cwd=server.cwd)
        with open(os.devnull, "w", encoding="utf-8") as quiet:
            async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=deadline,
                              message_handler=faults.handler) as client:
                yield client, faults
        return
    assert server.url is not None
    async with httpx2.AsyncClient(headers=_headers(server, environ), timeout=deadline,
                                  follow_redirects=False, trust_env=False) as http, \
            Client(streamable_http_client(server.url, http_client=http),
                   read_timeout_seconds=deadline, message_handler=faults.handler) as client:
        yield client, faults


def _failure(exc: BaseException) -> McpToolError:
    """The typed error for whatever escaped an operation (an exception group's first)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpToolError):
        return exc
    if isinstance(exc, MCPError):
        code = exc.code
        if code in (-32700, -32600, -32601, -32602):
            return McpToolError("tool_protocol_error",
                                f"the server answered JSON-RPC error {code}: {exc.error.message}")
        if code == -32001 or "timed out" in exc.error.message.lower():
            return McpToolError("tool_timeout", f"the server did not answer in time ({code})")
        return McpToolError("tool_unavailable",
                            f"the server failed the request ({code}: {exc.error.message})")
    if isinstance(exc, TimeoutError):
        return McpToolError("tool_timeout", "the server did not answer before the deadline")
    if isinstance(exc, OSError | anyio.BrokenResourceError | anyio.ClosedResourceError
                  | anyio.EndOfStream | httpx2.HTTPError):
        return McpToolError("tool_unavailable",
                            f"the server could not be reached or closed ({type(exc).__name__})")
    if isinstance(exc, ValueError):  # a reply that is not a valid MCP message
        return McpToolError("tool_protocol_error",
                            f"the server's reply is not valid MCP ({type(exc).__name__})")
    return McpToolError("tool_unavailable", f"the MCP operation failed ({type(exc).__name__})")


async def list_tools(server: McpServerSpec, environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every tool the server lists: ``{"name", "description", "input_schema"}``."""
    tools: list[dict[str, Any]] = []
    try:
        with anyio.fail_after(server.list_timeout_s):
            async with _connected(server, environ, server.list_timeout_s) as (client, faults):
                cursor: str | None = None
                for _page in range(MAX_LIST_PAGES):
                    listed = await faults.watch(
                        functools.partial(client.list_tools, cursor=cursor, cache_mode="bypass"))
                    tools += [{"name": t.name, "description": t.description or "",
                               "input_schema": t.input_schema} for t in listed.tools]
                    cursor = listed.next_cursor
                    if not cursor:
                        return tools
        raise McpToolError("tool_protocol_error",
                           f"the tool list did not end within {MAX_LIST_PAGES} pages")
    except Exception as exc:  # every way a server can fail is one typed error
        raise _failure(exc) from None
    except BaseExceptionGroup as group:
        raise _failure(group) from None


async def call_tool(server: McpServerSpec, environ: Mapping[str, str], tool: str,
                    arguments: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """``(tools listed now, the result's text)`` of one call on a fresh connection: the
    list is taken in the same session, so a server whose tools changed since the job's
    recorded list is caught before its answer is used (``calls.run_mcp_call``)."""
    try:
        with anyio.fail_after(server.call_timeout_s):
            async with _connected(server, environ, server.call_timeout_s) as (client, faults):
                listed = await faults.watch(lambda: client.list_tools(cache_mode="bypass"))
                tools = [{"name": t.name, "description": t.description or "",
                          "input_schema": t.input_schema} for t in listed.tools]
                if tool not in {t["name"] for t in tools}:
                    return tools, ""
                result = await faults.watch(lambda: client.call_tool(tool, arguments))
    except Exception as exc:
        raise _failure(exc) from None
    except BaseExceptionGroup as group:
        raise _failure(group) from None
    texts = []
    for block in result.content:
        text = getattr(block, "text", None)
        texts.append(text if isinstance(text, str)
                     else f"[{getattr(block, 'type', 'content')} content not shown]")
    text = "\n".join(texts)
    if result.is_error:
        raise McpToolError("tool_reported_error", text.splitlines()[0] if text else
                           "the tool reported an error")
    return tools, text
