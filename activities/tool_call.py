"""``run_tool_call``: one research tool call, run once and stored once, by its call id.

Why this exists: a worker can die after a tool ran and before the workflow heard back;
Temporal then runs the activity again. The exchange — the call, its argument hash, the
full result and its hash — is stored as one ``tool_record`` artifact per call id, written
with the call id as its write id, so a retry finds the stored exchange and returns it:
nothing is written twice and the model sees the same result. The workflow gets only a
reference and the result's size; the content stays in the store (results can be large, and
history must stay flat over hundreds of turns).

A ``note`` is checked against the stored exchanges its citations name
(``research_tools.notes``); ``update_plan`` and ``finish`` only have their arguments
checked here (the turn's record writes the plan; the workflow checks ``finish``). A call
the runtime refuses (``ToolRejected``: unknown tool,
malformed or over-limit arguments, undeclared source, path outside it, a citation that does
not match …) is stored the same way as an ``error`` result whose content names the refusal,
so the model can correct itself next turn and the manifest can count it; it never fails
the activity.
"""

from __future__ import annotations

import json
from typing import Any, cast, get_args

from activities.job_policy import job_policy
from activities.mcp.calls import run_mcp_call
from activities.mcp.citations import is_mcp
from activities.research_tools import ToolRejected, run_source_tool
from activities.research_tools.arguments import (
    FinishArguments,
    NoteArguments,
    UpdatePlanArguments,
    parse_arguments,
)
from activities.research_tools.notes import verify_note
from activities.research_tools.rejected import RejectionKind
from activities.runtime import (
    ActivityRuntime,
    dumps,
    pause_point,
    principal_of,
    put_once,
    ref_of,
)
from activities.telemetry import emit, now_ns
from activities.web_refresh import web_pages
from artifacts import content_hash
from context.admission.security import redact_secrets
from context.errors import ToolHistoryError
from context.items import sha256_text
from context.tool_history import canonical_argument_hash
from context.vocabulary import SourceType
from contracts.activity_messages import ToolCallInput, ToolCallResult
from contracts.job_spec import JobSpec
from contracts.path_safety import PathRoots


def exchange_id(job_id: str, call_id: str) -> str:
    """The artifact id of one call's stored exchange."""
    return f"{job_id}:tool:{call_id}"


def _argument_hash(tool_name: str, arguments: dict[str, Any]) -> str | None:
    try:
        return canonical_argument_hash(tool_name, arguments)
    except ToolHistoryError:  # not canonical JSON (the refusal says why): no hash
        return None


async def stored_exchange(store: Any, artifact_id: str,
                  principal: Any) -> tuple[Any, dict[str, Any]] | None:
    """The stored exchange (its record and body) under ``artifact_id``, if there is one
    (a call's retry, a note's cited calls, ``record_turn``'s notes all read it here)."""
    record = await store.head("tool_record", artifact_id, principal=principal)
    if record is None:
        return None
    _, raw = await store.get("tool_record", artifact_id, principal=principal,
                             revision=record.revision)
    body: dict[str, Any] = json.loads(raw)
    return record, body


async def _note(store: Any, spec: JobSpec, principal: Any,
                raw_arguments: dict[str, Any]) -> dict[str, Any]:
    """A ``note`` checked against the stored results its citations name (``notes``)."""
    arguments = parse_arguments("note", raw_arguments)
    assert isinstance(arguments, NoteArguments)
    exchanges: dict[str, Any] = {}
    for call_id in sorted({citation.call_id for citation in arguments.citations}):
        found = await stored_exchange(store, exchange_id(spec.job_id, call_id), principal)
        if found is not None:
            exchanges[call_id] = found[1]
    return verify_note(arguments, [topic.name for topic in spec.topics], exchanges)


_REFUSALS = frozenset(get_args(RejectionKind))
#: which of the policy's source limits bounds a read of each source kind
_LIMIT_OF_KIND = {"git": SourceType.REPOSITORY_SOURCE, "web_page": SourceType.WEB_PAGE,
                  "document": SourceType.OFFICIAL_DOCUMENT}


def read_limits(spec: JobSpec, roots: PathRoots) -> dict[str, int]:
    """The most lines one ``read`` returns per source kind: the job policy's source limits
    (docs/context-engine.md), the same bound its assembly puts on an excerpt. A policy file
    is read inside ``roots`` (``activities.job_policy``)."""
    policy = job_policy(spec.policy, roots)
    limits = {}
    for kind, source_type in _LIMIT_OF_KIND.items():
        limit = policy.source_limits.get(source_type)
        if limit is not None and limit.max_lines:
            limits[kind] = limit.max_lines
    return limits


def _bookkeeping(tool_name: str, raw_arguments: dict[str, Any]) -> dict[str, Any]:
    """``update_plan`` and ``finish`` read nothing: checked arguments are their result.

    The plan becomes a new revision of the job's plan when the turn is recorded
    (``record_turn``); ``finish`` is checked by the workflow against the notes it holds.
    """
    arguments = parse_arguments(tool_name, raw_arguments)
    if isinstance(arguments, UpdatePlanArguments):
        return {"accepted": True, "plan_chars": len(arguments.text)}
    assert isinstance(arguments, FinishArguments)
    return {"accepted": True, "summary": arguments.summary, "open_items": arguments.open_items}


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


async def _run_and_store(runtime: ActivityRuntime, store: Any, spec: JobSpec, principal: Any,
                         artifact_id: str, inp: ToolCallInput) -> tuple[Any, dict[str, Any]]:
    """Run the call and store its exchange; the stored one if another attempt got there
    first (its body then is the answer, whatever this attempt computed)."""
    try:
        if inp.refusal is not None:
            kind, _, detail = inp.refusal.partition(": ")
            raise ToolRejected(cast(RejectionKind, kind) if kind in _REFUSALS
                               else "malformed_arguments", detail)
        if inp.tool_name == "note":
            result = await _note(store, spec, principal, inp.arguments)
        elif inp.tool_name in ("update_plan", "finish"):
            result = _bookkeeping(inp.tool_name, inp.arguments)
        elif is_mcp(inp.tool_name):  # an operator-defined MCP server's tool (docs/mcp.md)
            result = await run_mcp_call(runtime, store, spec, inp.call_id, inp.tool_name,
                                        inp.arguments, inp.approval)
        else:
            result = await run_source_tool(
                inp.tool_name, inp.arguments, spec.sources, runtime.locations,
                read_limits=read_limits(spec, runtime.roots_for(spec)),
                roots=runtime.roots_for(spec), web_pages=await web_pages(runtime, spec))
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
