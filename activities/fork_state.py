"""``fork_state``: copy a parent job's state after research turn N into a fork's own
artifacts (docs/architecture.md#forking-a-job).

The parent's state as of turn N is found from the per-turn revisions ``record_turn``
writes (write id ``turn-N``; ``parent_state``): the tool-history chunks and notes chunks
at the newest revision of a turn up to N, the agent plan likewise, the research plan and
job spec written before turn N's tool chunk, and the newest checkpoint whose tool history
is a turn up to N. Every revision is read verified against its content hash (the store
refuses one that is not) and, when the worker has attestation keys, against its
attestation; the checkpoint against its seal. ``state_hash`` is the hash of that list.

``fork_state`` then checks the fork: signed (purpose ``fork``) by a listed reviewer or
operator of the parent's stored spec, for the parent's first run; its spec exactly
``contracts.fork.fork_spec`` of the parent's spec and the signed lineage; the parent's
state hash the one signed. Only then does it write — the fork's spec, and a copy of each
parent revision under the fork's own ids (content-addressed, each marked
``inherited_from: <parent>@turn N`` and written with the copied turn's write id, so a
retry writes nothing twice and a fork of a fork finds its turns) — and returns only
references. A dropped note (``--drop-note``, or a note citing a ``--drop-source``) leaves the
copied notes chunk and, with its note call's request and result, the copied tool history
(its exchange is not copied): the fork's model does not read it again. A dropped source's
own calls (its reads, searches and listings) leave the tool history and its exchanges the
same way, so nothing of it reaches the fork's requests. The parent's
artifacts are read, never written.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from activities.record_turn import TOOL_CHUNK_TURNS, agent_plan_id
from activities.research_tools.exchanges import exchange_id
from activities.runtime import (
    ActivityRuntime,
    dumps,
    pause_point,
    principal_of,
    put_once,
    ref_of,
    scope_of,
)
from activities.store_activities import plan_id, store_job_spec
from artifacts.errors import StoreError
from contracts.activity_messages import ArtifactRef, StepState, StoreJobSpecInput
from contracts.fork import (
    ForkError,
    ForkRefused,
    ForkStateInput,
    ForkStateResult,
    check_signature,
    fork_spec,
)
from contracts.fork import unsigned as unsigned_spec
from contracts.fork_reader import CHUNK_TURNS, ParentState, parent_state, write_turn
from contracts.job_spec import JobSpec
from contracts.lineage import ForkLineage


def _source_calls(tools: list[tuple[Any, bytes]], sources: set[str]) -> set[str]:
    """The calls over a source the edits drop (a ``read``, ``search`` or ``list`` whose
    ``source`` argument names it): the fork's model must not read that source's lines in
    its history any more than in a new call."""
    if not sources:
        return set()
    return {str(call.get("call_id")) for _rec, body in tools
            for call in json.loads(body).get("calls", [])
            if isinstance(call.get("arguments"), dict)
            and call["arguments"].get("source") in sources}


def _kept_notes(body: bytes, lineage: ForkLineage, source_calls: set[str]
                ) -> tuple[dict[str, Any], int, set[str], set[str]]:
    """The notes chunk without the notes the edits drop; how many were dropped, which
    ``--drop-note`` ids matched, and the note calls none of whose notes is kept. A note
    citing a dropped source (or a call over one) goes whole, each of its citations: its
    note call would otherwise still cite lines its history no longer shows."""
    pack = json.loads(body)
    drops, sources = set(lineage.edits.drop_notes), set(lineage.edits.drop_sources)
    records = pack.get("records", [])
    sourced = {str(r.get("call_id") or "") for r in records
               if r.get("source_name") in sources or r.get("cited_call_id") in source_calls}
    kept, matched, gone_calls, kept_calls = [], set(), set(), set()
    for record in records:
        hit = {record.get("item_id"), record.get("call_id")} & drops
        matched |= {h for h in hit if h}
        if hit or str(record.get("call_id") or "") in sourced:
            gone_calls.add(str(record.get("call_id") or ""))
            continue
        kept_calls.add(str(record.get("call_id") or ""))
        kept.append(record)
    dropped = len(records) - len(kept)
    return {**pack, "records": kept}, dropped, matched, gone_calls - kept_calls - {""}


def _without_calls(body: bytes, calls: set[str]) -> bytes | None:
    """A tool-history chunk without the note calls a dropped note was made by (its call
    and result), so the fork's model no longer reads the note in its history; ``None``
    when the chunk holds none of them."""
    tools = json.loads(body)
    if not calls & {str(c.get("call_id")) for c in tools.get("calls", [])}:
        return None
    return dumps({**tools,
                  "calls": [c for c in tools.get("calls", []) if c.get("call_id") not in calls],
                  "results": [r for r in tools.get("results", [])
                              if r.get("call_id") not in calls]})


async def fork_state(runtime: ActivityRuntime, inp: ForkStateInput) -> ForkStateResult:
    store = await runtime.store()
    spec, lineage = inp.spec, inp.spec.lineage
    if lineage is None:
        raise ForkRefused(f"refused: job {spec.job_id} is not a fork (no lineage)")
    principal = principal_of(spec)
    parent_head = await store.head("job_spec", lineage.parent_job, principal=principal)
    if parent_head is None:
        raise ForkRefused(f"refused: no job {lineage.parent_job} in "
                          f"{spec.scope.tenant}/{spec.scope.project}")
    if parent_head.metadata.get("first_run_id") not in (None, lineage.parent_run_id):
        raise ForkRefused(f"refused: the fork names run {lineage.parent_run_id} of job "
                          f"{lineage.parent_job}, which is another job of the same id")
    try:
        parent = await parent_state(store, lineage.parent_job, principal, lineage.turn,
                                    verify_record=store.verify)
    except StoreError as exc:
        raise ForkRefused(f"refused: job {lineage.parent_job}'s state at turn "
                          f"{lineage.turn} cannot be read: {type(exc).__name__}") from None
    check_signature(lineage, parent.spec, now=datetime.now(UTC))
    try:
        expected = fork_spec(parent.spec, lineage.model_copy(update={"signature": None}))
    except ForkError as exc:
        raise ForkRefused(f"refused: {exc}") from None
    if unsigned_spec(spec) != expected:
        raise ForkRefused(f"refused: job {spec.job_id}'s spec is not {lineage.parent_job}'s "
                          "spec with the signed edits (only the edits may differ)")
    found = parent.state_hash()
    if found != lineage.state_hash:
        raise ForkRefused(f"refused: job {lineage.parent_job}'s state at turn {lineage.turn} "
                          f"is {found}, not the signed {lineage.state_hash}")

    label = lineage.label()
    mark = {"inherited_from": label}
    await pause_point("fork_state_before_write")
    job_ref = await store_job_spec(runtime, StoreJobSpecInput(spec=spec,
                                                              first_run_id=inp.first_run_id))

    async def copy(kind: str, artifact_id: str, src: Any, body: bytes, *,
                   metadata: dict[str, Any] | None = None) -> ArtifactRef:
        # every copy is the first revision of the fork's own artifact (a fork id is never
        # reused): a retry after it landed meets a revision conflict and ``put_once``
        # answers with that revision — never a second copy (the fault matrix's
        # kill:fork_state_after_write)
        turn = write_turn(src)
        rec = await put_once(store, kind, artifact_id, body, spec=spec, trust=src.trust,
                             parent_revision=None, write_id=f"turn-{turn}" if turn else "fork",
                             media_type=src.media_type, metadata={**mark, **(metadata or {})})
        return ref_of(rec)

    # the notes the edits drop, first: their note calls leave the copied tool history too
    notes_kept: list[tuple[Any, bytes, dict[str, Any], int]] = []
    source_calls = _source_calls(parent.tools, set(lineage.edits.drop_sources))
    dropped, matched, gone_calls, topics = 0, set[str](), set(source_calls), list[str]()
    for rec, body in parent.notes:
        kept, gone, hit, calls = _kept_notes(body, lineage, source_calls)
        dropped, matched, gone_calls = dropped + gone, matched | hit, gone_calls | calls
        topics += [t for r in kept["records"] for t in r.get("topics", [])]
        notes_kept.append((rec, body, kept, gone))
    unmatched = [n for n in lineage.edits.drop_notes if n not in matched]
    if unmatched:
        raise ForkRefused(f"refused: --drop-note {unmatched[0]!r} names no note of job "
                          f"{lineage.parent_job} at turn {lineage.turn}")
    plan_ref = None
    if parent.plan is not None:
        plan_ref = await copy("research_plan", plan_id(spec), *parent.plan)
    tool_ref = None
    for rec, body in parent.tools:
        number = rec.artifact_id.rsplit(".t", 1)[-1]
        edited = _without_calls(body, gone_calls)
        tool_ref = await copy("tool_record", f"{spec.job_id}.tools.t{number}", rec,
                              body if edited is None else edited,
                              metadata={"edited": "calls dropped by the fork's edits"}
                              if edited is not None else None)
    for rec, body in parent.exchanges:
        call = rec.artifact_id.split(":tool:", 1)[-1]
        if call not in gone_calls:
            await copy("tool_record", exchange_id(spec.job_id, call), rec, body)
    notes_ref: ArtifactRef | None = None
    for rec, body, kept, gone in notes_kept:
        number = rec.artifact_id.rsplit(".t", 1)[-1]
        extra = {"edited": "notes dropped by the fork's edits"} if gone else None
        notes_ref = await copy("evidence_pack", f"{spec.job_id}.notes.t{number}", rec,
                               body if not gone else dumps(kept), metadata=extra)
    agent_ref = await _agent_plan(store, spec, lineage, parent, principal, copy)
    checkpoint_id = None
    if parent.checkpoint is not None:
        checkpoint_id = f"{spec.job_id}-cp-0001-research"
        refs = [r for r in (job_ref, plan_ref, tool_ref, notes_ref, agent_ref) if r]
        sealed = {k: v for k, v in parent.checkpoint.items() if k != "_body_hash"}
        sealed.update(checkpoint_id=checkpoint_id, goal=spec.question, manifest_ids=[],
                    previous_checkpoint=None, inherited_from=label,
                    artifact_refs=[r.model_dump(mode="json") for r in refs],
                    forked_from_checkpoint=parent.checkpoint.get("checkpoint_id"))
        await store.put_checkpoint(checkpoint_id, run_id=spec.job_id,
                                   step_id=f"fork-{lineage.turn}", body=sealed,
                                   scope=scope_of(spec))
    await pause_point("fork_state_after_write")
    covered = [t.name for t in spec.topics if t.name in set(topics)]
    return ForkStateResult(
        refs=StepState(job_spec=job_ref, plan=plan_ref, tool_records=tool_ref, notes=notes_ref,
                       agent_plan=agent_ref, checkpoint_id=checkpoint_id),
        turn=lineage.turn, checkpoint_id=checkpoint_id, covered_topics=covered,
        notes_dropped=dropped, state_hash=found)


async def _agent_plan(store: Any, spec: JobSpec, lineage: ForkLineage, parent: ParentState,
                      principal: Any, copy: Any) -> ArtifactRef | None:
    """The fork's agent plan: the ``--plan`` revision the CLI stored (its text's sha256
    must be the signed one), else a copy of the parent's."""
    edit = lineage.edits.plan
    if edit is None:
        return await copy("agent_plan", agent_plan_id(spec.job_id), *parent.agent_plan) \
            if parent.agent_plan is not None else None
    if edit.artifact_id != agent_plan_id(spec.job_id):
        raise ForkRefused(f"refused: the --plan edit names {edit.artifact_id}, not the fork's "
                          "own agent plan")
    rec, body = await store.get("agent_plan", edit.artifact_id, principal=principal,
                                revision=edit.revision)
    if hashlib.sha256(body).hexdigest() != edit.sha256:
        raise ForkRefused(f"refused: the fork's stored plan is not the signed one "
                          f"(sha256 {edit.sha256[:12]}…)")
    return ref_of(rec)


#: the reader's chunking is record_turn's
assert CHUNK_TURNS == TOOL_CHUNK_TURNS

__all__ = ["fork_state"]
