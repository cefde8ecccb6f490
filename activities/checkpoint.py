"""The structured checkpoint written after every stage (docs/architecture.md#checkpoints).

Its sections are exactly those the docs list: goal, constraints, current stage, done / in progress /
blocked, confirmed claims with source refs, conflicts and negative findings (with the
searched scope, so "not found yet" never turns into "does not exist"), open items, draft
revision, next steps, artifact / checkpoint refs. The next step re-admits it as
``derived_context`` — never as authority.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from activities.parsed import PARSED
from activities.runtime import ActivityRuntime, pause_point, principal_of, scope_of
from artifacts import Store
from contracts.activity_messages import CheckpointInput, CheckpointResult, StepState
from contracts.steps import CHECKPOINT_STAGES

STAGES = CHECKPOINT_STAGES
MAX_CLAIMS = 60


async def _derived(store: Store, spec: Any, ref: Any, what: str,
                   derive: Callable[[Any], Any]) -> Any:
    """``derive(parsed JSON)`` of a held revision, or ``None`` without one.

    The revision is read (and verified) every time; what is derived from its bytes is
    kept by their content hash (``activities.parsed``) as JSON text, so each checkpoint
    gets fresh objects without decoding the whole evidence pack again."""
    if ref is None:
        return None
    rec, body = await store.get(ref.kind, ref.artifact_id, principal=principal_of(spec),
                                revision=ref.revision)
    text = PARSED.get(what, rec.content_hash, lambda: json.dumps(derive(json.loads(body))))
    return json.loads(text)


def _claims(pack: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"item_id": r["item_id"], "topics": r.get("topics", []),
         "source_ref": r.get("citation") or r["item_id"], "revision": r.get("revision")}
        for r in pack.get("records", [])[:MAX_CLAIMS]
    ]


def _negative(records: dict[str, Any]) -> list[dict[str, Any]]:
    negative = []
    for acq in records.get("acquisitions", []):
        if acq.get("outcome") != "retrieved":
            negative.append({"source": acq["source_name"], "outcome": acq["outcome"],
                             "reason": acq.get("reason"), "searched": acq.get("searched")})
        for topic in acq.get("missing_topics", []):
            negative.append({"source": acq["source_name"], "topic": topic,
                             "finding": "no evidence found yet", "searched": acq.get("searched")})
    return negative


def _refs(state: StepState) -> list[dict[str, Any]]:
    out = []
    for name in ("job_spec", "plan", "source_records", "evidence_pack", "tool_records",
                 "draft", "review"):
        ref = getattr(state, name)
        if ref is not None:
            out.append(ref.model_dump(mode="json"))
    return out


async def build_checkpoint(runtime: ActivityRuntime, inp: CheckpointInput) -> dict[str, Any]:
    store = await runtime.store()
    spec, state = await runtime.spec_of(inp.job), inp.state
    claims = await _derived(store, spec, state.evidence_pack, "checkpoint_claims", _claims)
    negative = await _derived(store, spec, state.source_records, "checkpoint_negative",
                              _negative)
    idx = STAGES.index(inp.stage) if inp.stage in STAGES else 0
    blocked = [o for o in inp.open_items if o.startswith("blocked:")]
    return {
        "checkpoint_schema": "pressroom-checkpoint/v1",
        "checkpoint_id": inp.checkpoint_id,
        "goal": spec.question,
        "constraints": {"forbidden_actions": spec.forbidden_actions, "policy": spec.policy,
                        "destination": spec.destination,
                        "publish_requires": "an approving review by an allowed reviewer"},
        "current_stage": inp.stage,
        "done": list(STAGES[:idx]) if inp.status != "published" else list(STAGES),
        "in_progress": [] if blocked or inp.status != "running" else [inp.stage],
        "blocked": blocked,
        "status": inp.status,
        "confirmed_claims": claims or [],
        "conflicts_and_negative_findings": negative or [],
        "open_items": inp.open_items,
        "draft_revision": state.draft.revision if state.draft else None,
        "next_steps": inp.next_steps,
        "artifact_refs": _refs(state),
        "previous_checkpoint": state.checkpoint_id,
        "manifest_ids": inp.manifest_ids,
    }


async def write_checkpoint(runtime: ActivityRuntime, inp: CheckpointInput) -> CheckpointResult:
    store = await runtime.store()
    body = await build_checkpoint(runtime, inp)
    spec = await runtime.spec_of(inp.job)
    await pause_point(f"checkpoint_{inp.stage}")
    await pause_point("write_checkpoint_before_write")
    # The store seals the body under the sha256 of its canonical JSON (the same bytes
    # ``runtime.dumps`` gives for this JSON-native body), so its answer is the hash.
    digest = await store.put_checkpoint(inp.checkpoint_id, run_id=spec.job_id,
                                        step_id=inp.step_id, body=body, scope=scope_of(spec))
    await pause_point("write_checkpoint_after_write")
    return CheckpointResult(checkpoint_id=inp.checkpoint_id, content_hash=str(digest))


def render_checkpoint(body: dict[str, Any]) -> str:
    """The checkpoint as text for re-admission (derived context, never instructions)."""
    lines = [f"Checkpoint {body.get('current_stage')} ({body.get('status')})",
             f"Goal: {body.get('goal')}",
             f"Done: {', '.join(body.get('done', [])) or '-'}",
             f"In progress: {', '.join(body.get('in_progress', [])) or '-'}",
             f"Blocked: {'; '.join(body.get('blocked', [])) or '-'}",
             f"Draft revision: {body.get('draft_revision')}"]
    claims = body.get("confirmed_claims", [])
    if claims:
        lines.append("Evidence held:")
        lines += [f"- {c['source_ref']} (topics: {', '.join(c['topics']) or '-'})"
                  for c in claims]
    negative = body.get("conflicts_and_negative_findings", [])
    if negative:
        lines.append("Negative findings (searched scope recorded; not proof of absence):")
        lines += [f"- {json.dumps(n, sort_keys=True)}" for n in negative]
    lines += [f"Open item: {o}" for o in body.get("open_items", [])]
    lines += [f"Next: {n}" for n in body.get("next_steps", [])]
    return "\n".join(lines)
