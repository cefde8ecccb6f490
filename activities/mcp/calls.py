"""One MCP tool call inside the ``run_tool`` activity: checked, reserved, run, gated.

Why a reservation: ``run_tool`` stores each call's exchange once by call id
(``activities.tool_call``), but a worker can die after the server ran the call and before
the exchange is stored; Temporal then runs the activity again. For the job's own tools
that only reads again; an MCP server is someone else's process, so a call is reserved first
(a ``tool_record`` ``<job>:tool:<call id>:reserved`` written with no parent: exactly one
attempt can create it) and a retry that finds the reservation without a stored exchange
runs nothing and stores a ``tool_interrupted`` error the model sees — at most one call per
call id, one record (docs/mcp.md).

The result enters as untrusted data through the gates every tool result meets
(docs/context-engine.md): a text over the operator's ``max_result_chars`` is
``tool_output_too_large`` (never cut silently), secrets are redacted before it is stored,
instruction-like lines are flagged (the engine's own admission gate scans it again when a
request is assembled, and a tool result's role is untrusted data). Its content is shaped
like a ``read`` result — ``source`` (the tool's full name), ``revision`` (the sha256 of
the text), ``path`` ``result`` and numbered ``lines`` — so a note cites it by call id and
line range and is checked like any citation (``citations``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from activities.mcp.approvals import check_approval
from activities.mcp.client import McpToolError, call_tool
from activities.mcp.listing import definition_hash, ensure_tool_list, granted_entry
from activities.runtime import dumps, pause_point, principal_of, scope_of
from activities.tool_errors import ToolRejected
from artifacts import Store
from artifacts.errors import RevisionConflict
from context import detector_for, redact_secrets
from contracts.activity_messages import ToolApproval
from contracts.job_spec import JobSpec
from contracts.mcp_servers import split_tool_name

#: the path every MCP result's lines are cited under
RESULT_PATH = "result"
#: the most lines a result keeps (each line is also cut to ``MAX_LINE_CHARS``)
MAX_LINES = 400
MAX_LINE_CHARS = 2000


def reservation_id(job_id: str, call_id: str) -> str:
    return f"{job_id}:tool:{call_id}:reserved"


def _rejected(kind: str, detail: str) -> ToolRejected:
    return ToolRejected(kind, redact_secrets(detail))  # type: ignore[arg-type]


async def _reserve(store: Store, spec: JobSpec, call_id: str, server: str, tool: str) -> bool:
    """Whether this attempt reserved the call (False: an earlier attempt did)."""
    artifact_id = reservation_id(spec.job_id, call_id)
    principal = principal_of(spec)
    if await store.head("tool_record", artifact_id, principal=principal) is not None:
        return False
    body = dumps({"call_id": call_id, "server": server, "tool": tool,
                  "reserved_at": datetime.now(UTC).isoformat()})
    try:
        await store.put("tool_record", artifact_id, body, principal=principal,
                        scope=scope_of(spec), trust="trusted_state", parent_revision=None,
                        media_type="application/json", metadata={"write_id": call_id})
    except RevisionConflict:
        return False
    return True


def gated_content(server: str, tool: str, text: str, limit: int) -> dict[str, Any]:
    """The result as stored: size-checked, redacted, flagged, in numbered lines."""
    if len(text) > limit:
        raise _rejected("tool_output_too_large",
                        f"mcp__{server}__{tool} returned {len(text)} characters; the operator "
                        f"allows {limit} per result")
    detector = detector_for((), ())
    scan = detector.scan_secrets(text)
    redacted = text if scan is None else scan.redacted
    lines = [line[:MAX_LINE_CHARS] for line in redacted.splitlines()[:MAX_LINES]] or [""]
    flagged = [number for number, line in enumerate(lines, start=1)
               if detector.instruction_matches(line)]
    return {"source": f"mcp__{server}__{tool}", "server": server, "tool": tool,
            "revision": hashlib.sha256(redacted.encode("utf-8", "surrogatepass")).hexdigest(),
            "path": RESULT_PATH, "start_line": 1, "end_line": len(lines), "lines": lines,
            "secrets_redacted": sorted(set(scan.kinds)) if scan is not None else [],
            "instruction_lines": flagged,
            "called_at": datetime.now(UTC).isoformat()}


async def run_mcp_call(runtime: Any, store: Store, spec: JobSpec, call_id: str,
                       name: str, arguments: Mapping[str, Any],
                       approval: ToolApproval | None = None) -> dict[str, Any]:
    """The gated result of one call of ``name`` (``mcp__<server>__<tool>``), or
    ``ToolRejected`` with a typed kind the model sees."""
    split = split_tool_name(name)
    if split is None:
        raise _rejected("unknown_tool", f"{name[:64]!r} is not an MCP tool name")
    server_name, tool = split
    grant = next((g for g in spec.tools if g.server == server_name), None)
    if grant is None or tool not in grant.tools:
        raise _rejected("tool_not_granted", f"{name} is not granted to this job")
    listing = await ensure_tool_list(runtime, spec)
    entry = granted_entry(listing, server_name, tool)
    if entry is None:
        error = ((listing or {}).get("servers", {}).get(server_name) or {}).get("error")
        raise _rejected("tool_unavailable", f"{name} is not in the job's recorded tool list"
                        + (f" ({error})" if error else ""))
    if entry["effect"] == "write":  # signed approval of exactly this call, reserved for it
        await check_approval(store, spec, call_id, server_name, tool, arguments, approval)
    servers = runtime.mcp_servers.servers if runtime.mcp_servers is not None else {}
    server = servers.get(server_name)
    if server is None:
        raise _rejected("tool_unavailable", f"server {server_name!r} is no longer defined")
    if not await _reserve(store, spec, call_id, server_name, tool):
        raise _rejected("tool_interrupted",
                        f"an earlier attempt of call {call_id} may have run {name} and was "
                        "interrupted before its result was stored; it is not run twice")
    try:
        live, text = await call_tool(server, runtime.mcp_environ, tool, dict(arguments))
    except McpToolError as failed:
        raise _rejected(failed.kind, f"{name}: {failed.detail}") from None
    await pause_point("mcp_call_after")  # crash tests: the call ran, nothing is stored
    now = next((t for t in live if t["name"] == tool), None)
    if now is None or definition_hash(now) != entry["definition_hash"]:
        raise _rejected("tool_list_changed",
                        f"{name}'s definition on the server is not the one recorded for this "
                        "job; its result is not used")
    return gated_content(server_name, tool, text, server.max_result_chars)
