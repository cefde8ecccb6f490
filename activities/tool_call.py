"""``run_tool_call``: one research tool call, run once and stored once, by its call id.

Why this exists: a worker can die after a tool ran and before the workflow heard back;
Temporal then runs the activity again. The exchange — the call, its argument hash, the
full result and its hash — is stored as one ``tool_record`` artifact per call id, written
with the call id as its write id, so a retry finds the stored exchange and returns it:
nothing is written twice and the model sees the same result. The workflow gets only a
reference and the result's size; the content stays in the store (results can be large, and
history must stay flat over hundreds of turns).

Which tool runs is the registry's answer (``research_tools.registry``): the job's own tools
and an operator's MCP tools alike; a ``note`` is checked against the stored exchanges its
citations name (``research_tools.note``); ``update_plan`` and ``finish`` only have their
arguments checked here (the turn's record writes the plan; the workflow checks
``finish``). A call the runtime refuses (``ToolRejected``: unknown tool,
malformed or over-limit arguments, undeclared source, path outside it, a citation that does
not match …) is stored the same way as an ``error`` result whose content names the refusal,
so the model can correct itself next turn and the manifest can count it; it never fails
the activity.
"""

from __future__ import annotations

import json
from typing import Any, cast, get_args

from activities.research_tools.exchanges import exchange_id, stored_exchange
from activities.research_tools.registry import tool_named
from activities.research_tools.source_tools import read_limits
from activities.research_tools.tool import ToolContext
from activities.runtime import (
    ActivityRuntime,
    dumps,
    pause_point,
    principal_of,
    put_once,
    ref_of,
)
from activities.telemetry import emit, now_ns
from activities.tool_errors import RejectionKind, ToolRejected
from activities.web_refresh import web_pages
from artifacts import Store, content_hash
from context import ToolHistoryError, canonical_argument_hash, redact_secrets, sha256_text
from contracts.activity_messages import ToolCallInput, ToolCallResult
from contracts.job_spec import JobSpec

__all__ = ["exchange_id", "read_limits", "run_tool_call", "stored_exchange"]


def _argument_hash(tool_name: str, arguments: dict[str, Any]) -> str | None:
    try:
        return canonical_argument_hash(tool_name, arguments)
    except ToolHistoryError:  # not canonical JSON (the refusal says why): no hash
        return None


_REFUSALS = frozenset(get_args(RejectionKind))


async def run_tool_call(runtime: ActivityRuntime, inp: ToolCallInput) -> ToolCallResult:
    store = await runtime.store()
    spec = await runtime.spec_of(inp.job)
    principal = principal_of(spec)
    artifact_id = exchange_id(spec.job_id, inp.call_id)
    # a retry after a crash finds the exchange the first attempt stored, and runs nothing
    found = await stored_exchange(store, artifact_id, principal)
    ran, started = found is None, now_ns()
    if found is None:
        await pause_point("run_tool")
        found = await _run_and_store(runtime, store, spec, principal, artifact_id, inp)
    record, body = found
    result = body["result"]
    if ran:  # a retry that finds the stored exchange ran nothing
        emit("tool_call", started, tool=inp.tool_name, call_id=inp.call_id,
             outcome=result["rejection"] or result["status"], job_id=spec.job_id)
    note_topic = None
    if result["tool_name"] == "note" and result["status"] == "success":
        note_topic = json.loads(result["content"])["topic"]
    return ToolCallResult(call_id=inp.call_id, status=result["status"],
                          exchange=ref_of(record), result_hash=result["result_hash"],
                          result_chars=len(result["content"]), rejection=result["rejection"],
                          note_topic=note_topic)


async def _run_and_store(runtime: ActivityRuntime, store: Store, spec: JobSpec, principal: Any,
                         artifact_id: str, inp: ToolCallInput) -> tuple[Any, dict[str, Any]]:
    """Run the call and store its exchange; the stored one if another attempt got there
    first (its body then is the answer, whatever this attempt computed)."""
    try:
        if inp.refusal is not None:
            kind, _, detail = inp.refusal.partition(": ")
            raise ToolRejected(cast(RejectionKind, kind) if kind in _REFUSALS
                               else "malformed_arguments", detail)
        # every tool, the job's own and an operator's MCP tool alike, through the registry
        tool = tool_named(inp.tool_name)
        result = await tool.run(ToolContext(
            runtime=runtime, store=store, spec=spec, principal=principal,
            call_id=inp.call_id, tool_name=inp.tool_name, approval=inp.approval,
            lookup=tool_named, web_pages=lambda: web_pages(runtime, spec)),
            tool.parse(inp.arguments))
        status, rejection = "success", None
        content = json.dumps(result, sort_keys=True, ensure_ascii=False)
    except ToolRejected as refused:
        status, rejection = "error", refused.kind
        # the detail may quote a tool's error text (a clone URL with its token): redacted
        content = json.dumps({"error": refused.kind,
                              "detail": redact_secrets(refused.detail)},
                             sort_keys=True, ensure_ascii=False)
    body = {
        "call": {"call_id": inp.call_id, "tool_name": inp.tool_name,
                 "arguments": inp.arguments, "turn": inp.turn,
                 "argument_hash": _argument_hash(inp.tool_name, inp.arguments)},
        "result": {"call_id": inp.call_id, "tool_name": inp.tool_name, "status": status,
                   "content": content, "result_hash": sha256_text(content),
                   "rejection": rejection},
    }
    raw = dumps(body)
    await pause_point("run_tool_before_write")
    record = await put_once(store, "tool_record", artifact_id, raw, spec=spec,
                            trust="untrusted_external_data", parent_revision=None,
                            write_id=inp.call_id)
    await pause_point("run_tool_after_write")
    if record.content_hash == content_hash(raw):
        return record, body  # this attempt's write: no need to read it back
    _, stored = await store.get("tool_record", artifact_id, principal=principal,
                                revision=record.revision)
    winner: dict[str, Any] = json.loads(stored)
    return record, winner
