"""A streamable-HTTP MCP server for the tests (the SDK's own ``MCPServer``), on loopback.

Every request must carry ``Authorization: Bearer $HTTP_MCP_TOKEN`` (else 401), so a test
shows the worker sends the header from the variable the operator named. Run as
``python http_server.py PORT``; it prints nothing and serves until killed.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("http-facts")


@server.tool()
def facts(topic: str) -> str:
    """Facts about a topic."""
    return f"facts about {topic}\nthe retry budget is 3 attempts per call"


def guarded(app: Any, token: str) -> Any:
    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)
    return asgi


if __name__ == "__main__":
    app = guarded(server.streamable_http_app(), os.environ["HTTP_MCP_TOKEN"])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
