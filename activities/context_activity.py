"""``assemble_context``: load a step's candidates from the store and run the context engine.

Every step re-admits everything: the job spec, the held revisions of the plan, evidence,
draft and review, the latest checkpoint, the tool history and the job's workspace files
(such as ``plan.md``). Nothing keeps a pass from an earlier step. The engine's verdict —
``Ready`` or ``ContextAssemblyBlocked`` — is sealed into the store as a manifest; a ready
manifest also carries the serialized request — once, as the canonical JSON its hash seals;
the draft activity verifies that hash and decodes the payload from those very bytes, so
the model gets exactly what was sealed. Only a small ``ContextRef`` goes back to the
workflow. With an attestation key configured, the manifest also records the verdict on the
signature of every stored revision the step read (``attestation``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from pydantic import ValidationError

import context
from activities.candidates import CandidateSet, attestation_summary, load_candidates
from activities.job_policy import job_policy
from activities.mcp.listing import tool_definitions as mcp_tool_definitions
from activities.research_tools import TOOL_DEFINITIONS
from activities.runtime import ActivityRuntime, pause_point, principal_of, scope_of
from activities.telemetry import emit, manifest_counts, now_ns
from artifacts import Store
from context import (
    ContextAssemblyManifest,
    ContextPolicy,
    ModelSpec,
    PrincipalContext,
    ScopeRef,
    ToolDefinition,
    TopicSpec,
    redact_secrets,
)
from contracts.activity_messages import AssembleContextInput, ContextRef
from contracts.job_spec import JobSpec
from contracts.lineage import ForkLineage
from contracts.steps import ASSEMBLY_STAGES, AssemblyStage

#: What each stage is deciding; the engine ranks relevance against it.
DECISIONS: dict[AssemblyStage, str] = {
    "plan": "write a research plan covering every topic and required source",
    "research": "research the topics with the tools and note each finding with citations",
    "draft": "draft the article from admitted evidence, one citation per claim",
    "revise": "revise the draft to address the reviewer's comments, citing evidence",
    "publish": "confirm the approved draft is the one being published",
}
#: Stages that need topic evidence; before research there is none to demand.
EVIDENCE_STAGES = frozenset(s for s in ASSEMBLY_STAGES if s not in ("plan", "research"))


async def previous_manifest(store: Store, spec: JobSpec, step_id: str
                            ) -> ContextAssemblyManifest | None:
    """The latest manifest sealed by an earlier step of the job, which the prompt-cache
    identity is compared with (docs/context-engine.md#prompt-cache-identity): without it
    every step said "bypassed: no previous manifest of this run". A retried step skips its
    own earlier attempt, so it seals the same assembly again. One indexed listing and one
    verified read per step; a manifest an older engine wrote that no longer parses
    compares as none."""
    rows = [row for row in await store.manifest_summaries(spec.job_id,
                                                          principal=principal_of(spec))
            if row["step_id"] != step_id]
    if not rows:
        return None
    body = await store.get_manifest(str(rows[-1]["manifest_id"]), principal=principal_of(spec))
    fields = ContextAssemblyManifest.model_fields
    try:
        return ContextAssemblyManifest.model_validate(
            {k: v for k, v in body.items() if k in fields})
    except ValidationError:
        return None


def _request(spec: JobSpec, inp: AssembleContextInput, candidates: CandidateSet,
             policy: ContextPolicy, previous: ContextAssemblyManifest | None = None,
             tools: tuple[ToolDefinition, ...] = TOOL_DEFINITIONS) -> Any:
    scope = ScopeRef(tenant=spec.scope.tenant, project=spec.scope.project, task=spec.scope.task)
    topics = [TopicSpec(name=t.name, terms=tuple(t.terms), blocking=t.blocking)
              for t in spec.topics] if inp.stage in EVIDENCE_STAGES else []
    return context.AssemblyRequest(
        run_id=spec.job_id,
        step_id=inp.step_id,
        stage=inp.stage,
        as_of=datetime.fromisoformat(inp.as_of),
        principal=PrincipalContext(principal_id=spec.principal.principal_id,
                                   clearance=spec.principal.clearance, scope=scope),
        scope=scope,
        policy=policy,
        model=ModelSpec(provider=spec.model.provider, name=spec.model.name,
                        context_limit=inp.state.context_limit or spec.model.context_limit),
        adapter=spec.model.adapter,
        question=spec.question,
        decision=DECISIONS[inp.stage],
        required_topics=tuple(topics),
        required_revisions={**candidates.required_revisions, **inp.state.accepted_revisions},
        candidates=tuple(candidates.items),
        acquisitions=tuple(candidates.acquisitions),
        tool_history=candidates.tool_history,
        tool_definitions=tools if inp.stage == "research" else (),
        evidence_budget=inp.state.evidence_budget,
        previous_manifest=previous,
    )


async def assemble_context(runtime: ActivityRuntime, inp: AssembleContextInput) -> ContextRef:
    started = now_ns()
    store = await runtime.store()
    spec = await runtime.spec_of(inp.job)
    # the job's policy, parsed once per worker; a policy file is read inside the worker's
    # source roots and its errors quote nothing from it (activities.job_policy)
    policy = job_policy(spec.policy, runtime.roots_for(spec))
    candidates = await load_candidates(store, spec, inp, policy, roots=runtime.roots_for(spec))
    previous = await previous_manifest(store, spec, inp.step_id)
    # the job's MCP tools, from the list stored once per job (activities.mcp.listing)
    offered = (*TOOL_DEFINITIONS, *await mcp_tool_definitions(store, spec))
    request = _request(spec, inp, candidates, policy, previous, offered)
    # The engine is pure CPU work (token counting, hashing); a thread keeps the worker's
    # event loop free to heartbeat and run other activities meanwhile.
    outcome = await asyncio.to_thread(context.assemble, request)
    manifest = outcome.manifest
    body: dict[str, Any] = manifest.model_dump(mode="json")
    signed = attestation_summary(store.attestation_key_id is not None,
                                 candidates.attestations)
    if signed is not None:  # without a key nothing is recorded: `explain` says "unsigned"
        body["attestation"] = signed
    if spec.lineage is not None:  # a fork: which items and tool calls are its parent's
        body["inherited"] = inherited_section(body, candidates.inherited, spec.lineage)
    blocked = isinstance(outcome, context.ContextAssemblyBlocked)
    input_hash = None
    if isinstance(outcome, context.Ready):
        ser = outcome.serialized
        body["serialized_request"] = {
            "adapter": ser.adapter, "adapter_version": ser.adapter_version,
            "serialization_policy_version": ser.serialization_policy_version,
            "canonical_json": ser.canonical_json, "hash": ser.hash,
        }
        input_hash = ser.hash
    status = "blocked" if blocked else "ready"
    await pause_point("assemble_context_before_write")
    await store.put_manifest(manifest.manifest_id, run_id=spec.job_id, step_id=inp.step_id,
                             status=status, body=body, scope=scope_of(spec))
    await pause_point("assemble_context_after_write")
    reason = str(outcome.blocked_reason) if isinstance(outcome, context.ContextAssemblyBlocked) \
        else None
    exclusions, partitions = manifest_counts(body)
    emit("assembly", started, job_id=spec.job_id, step_id=inp.step_id, stage=inp.stage,
         manifest_id=manifest.manifest_id, status=status, blocked_reason=reason,
         input_tokens=_input_tokens(body), exclusions=exclusions,
         partition_tokens=partitions if not blocked else {})
    # The wait for a resolve is the policy's to bound (docs/architecture.md#blocked-steps):
    # the workflow holds no policy, so every ref carries the value of the policy this step
    # ran under (a research turn's ready ref bounds a later budget or evidence block).
    return ContextRef(manifest_id=manifest.manifest_id, step_id=inp.step_id, stage=inp.stage,
                      status=status, input_hash=input_hash, blocked_reason=reason,
                      blocked_detail=_detail(body) if blocked else None,
                      block_timeout_s=request.policy.blocking.block_timeout,
                      history_transformed=bool(body.get("summaries")),
                      input_tokens=_input_tokens(body))


def inherited_section(body: dict[str, Any], items: dict[str, str],
                      lineage: ForkLineage) -> dict[str, Any]:
    """A fork's manifest's ``inherited`` section: ``inherited_from`` (``<parent>@turn N``)
    and the candidate items and tool calls that came from the parent, by id
    (docs/architecture.md#forking-a-job; ``pressroom explain`` shows it)."""
    candidates = {str(entry.get("item_id")) for entry in body.get("candidate_items") or []}
    calls = sorted({str(pair.get("call_id")) for pair in body.get("tool_pairs") or []
                    if int(pair.get("turn") or 0) <= lineage.turn})
    return {"inherited_from": lineage.label(),
            "items": {item: mark for item, mark in sorted(items.items()) if item in candidates},
            "tool_calls": calls}


def _input_tokens(body: dict[str, Any]) -> int | None:
    """The engine's count of the sealed request's input tokens, when it sealed one."""
    value = (body.get("budget") or {}).get("estimated_used")
    return int(value) if isinstance(value, int) else None


def _detail(body: dict[str, Any]) -> str | None:
    """A short human hint for a blocked step: the engine's detail, else the missing topics."""
    if body.get("blocked_detail"):  # it travels in workflow history: no secret in it
        return redact_secrets(str(body["blocked_detail"]))[:300]
    missing = [str(m) for m in body.get("missing_topics") or []]
    return f"missing topics: {', '.join(missing)}" if missing else None
