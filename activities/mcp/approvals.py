"""Signed per-call approval of MCP tools that act (``effect: write``).

Why: a tool that acts on the world (a commit, a payment, a message) must run only when a
listed reviewer approved exactly that call, and only once. ``mark_write_calls`` marks
such calls when a turn's reply is planned (from the job's stored tool list), so the
workflow waits for the approval as a durable Update with a timer (``approve_tool_call``);
the signature (the Ed25519 scheme of review decisions, ``contracts.signing``, purpose
``tool_approval``) binds the job, the call id, the server, the tool and the sha256 of the
call's canonical arguments (``contracts.mcp_servers.approval_body``). ``check_approval``
verifies it again where the call runs — the arguments it is checked against are the ones
about to be sent — and reserves it for that call: a record per approval nonce, written
with no parent, whose body names the call; the same approval presented for another call
is refused (``approval_refused``). The call itself then runs at most once under its call
id (``calls``' reservation), and its stored exchange consumes the approval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from activities.mcp.listing import granted_entry, stored_tool_list
from activities.runtime import dumps, principal_of, scope_of
from activities.tool_errors import ToolRejected
from artifacts import Store
from artifacts.errors import RevisionConflict
from contracts.activity_messages import PlannedCall, ToolApproval
from contracts.job_spec import JobSpec
from contracts.mcp_servers import approval_body, split_tool_name
from contracts.signing import SignatureError, verify


def approval_id(job_id: str, nonce: str) -> str:
    return f"{job_id}:tool-approval:{nonce}"


async def mark_write_calls(store: Store, spec: JobSpec,
                           calls: list[PlannedCall]) -> list[PlannedCall]:
    """``calls`` with each call of a granted ``effect: write`` MCP tool marked."""
    if not spec.tools or not any(split_tool_name(c.tool_name) for c in calls):
        return calls
    listing = await stored_tool_list(store, spec)
    marked = []
    for call in calls:
        split = split_tool_name(call.tool_name)
        entry = granted_entry(listing, *split) if split is not None else None
        write = (split is not None and entry is not None and entry["effect"] == "write"
                 and call.refusal is None
                 and any(g.server == split[0] and split[1] in g.tools for g in spec.tools))
        marked.append(call.model_copy(update={"needs_approval": True}) if write else call)
    return marked


async def check_approval(store: Store, spec: JobSpec, call_id: str, server: str, tool: str,
                         arguments: Mapping[str, Any], approval: ToolApproval | None) -> None:
    """``None`` when ``approval`` approves exactly this call and is reserved for it; else
    ``ToolRejected`` (``approval_required`` / ``approval_refused``)."""
    name = f"mcp__{server}__{tool}"
    if approval is None:
        raise ToolRejected("approval_required",
                           f"{name} acts on the world (effect: write); it runs only with a "
                           "listed reviewer's signed approval of this call")
    try:
        # the body of the call about to run, not the approval's own fields: an approval of
        # other arguments, another call or another tool does not verify
        body = approval_body(call_id, server, tool, arguments)
        if approval.first_run_id is not None:
            body["first_run_id"] = approval.first_run_id
        verify(approval.signature, "tool_approval", spec.job_id, body,
               allowed=spec.review.signers(operators=False))
    except SignatureError as exc:
        raise ToolRejected("approval_refused", f"{name}: {exc}") from None
    assert approval.signature is not None  # verify refuses an unsigned one
    artifact_id = approval_id(spec.job_id, approval.signature.nonce)
    principal = principal_of(spec)
    record = dumps({"call_id": call_id, "server": server, "tool": tool})
    try:
        await store.put("tool_record", artifact_id, record, principal=principal,
                        scope=scope_of(spec), trust="trusted_state", parent_revision=None,
                        media_type="application/json", metadata={"write_id": call_id})
    except RevisionConflict:
        _, raw = await store.get("tool_record", artifact_id, principal=principal)
        if json.loads(raw).get("call_id") != call_id:
            raise ToolRejected("approval_refused",
                               f"{name}: this approval was already used for another call"
                               ) from None
