"""Reading a job's state as of a research turn from the store, verified: what a fork
starts from (docs/architecture.md#forking-a-job). Used by the ``fork_state`` activity, which
copies it, and by ``pressroom fork``, which shows and signs its hash before anything starts.

The state after turn N is found from the per-turn revisions ``record_turn`` writes (write
id ``turn-N``): the tool-history and notes chunks at the newest revision of a turn up to N,
the agent plan likewise, the research plan and job spec written before turn N's tool chunk,
the stored exchange of every call in that history, and the newest checkpoint whose tool
history is a turn up to N. Every revision is read verified against its content hash and,
given a verifier (the worker's attestation keys), its attestation; the checkpoint against
its seal. ``ParentState.state_hash`` is the hash of that list.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from artifacts.errors import IntegrityError
from contracts.fork import ForkRefused
from contracts.job_spec import JobSpec

#: research turns per tool-history and notes chunk (``activities.record_turn``)
CHUNK_TURNS = 10


def tools_chunk_id(job_id: str, number: int) -> str:
    return f"{job_id}.tools.t{number:04d}"


def notes_chunk_id(job_id: str, number: int) -> str:
    return f"{job_id}.notes.t{number:04d}"


def plan_artifact_id(job_id: str) -> str:
    return f"{job_id}.agent-plan"


def exchange_artifact_id(job_id: str, call_id: str) -> str:
    return f"{job_id}:tool:{call_id}"


_TURN_WRITE = re.compile(r"^turn-(\d+)$")
_CALL_TURN = re.compile(r"^t(\d{4,})-\d+$")


def write_turn(rec: Any) -> int | None:
    """The research turn a revision was written by (its ``turn-N`` write id), if any."""
    found = _TURN_WRITE.match(str(rec.metadata.get("write_id", "")))
    return int(found.group(1)) if found else None


def call_turn(call_id: str) -> int | None:
    """The research turn of a runtime call id (``t0003-1`` → 3; ``decide.call_id``)."""
    found = _CALL_TURN.match(call_id)
    return int(found.group(1)) if found else None


@dataclass
class ParentState:
    """The parent's revisions as of turn ``turn`` (records and bodies, all verified)."""

    spec: JobSpec
    spec_rec: Any
    turn: int
    plan: tuple[Any, bytes] | None = None
    tools: list[tuple[Any, bytes]] = field(default_factory=list)
    notes: list[tuple[Any, bytes]] = field(default_factory=list)
    agent_plan: tuple[Any, bytes] | None = None
    checkpoint: dict[str, Any] | None = None
    exchanges: list[tuple[Any, bytes]] = field(default_factory=list)

    def revisions(self) -> list[Any]:
        found = [self.spec_rec, *(r for r, _ in self.tools), *(r for r, _ in self.notes)]
        found += [pair[0] for pair in (self.plan, self.agent_plan) if pair is not None]
        return found + [r for r, _ in self.exchanges]

    def state_hash(self) -> str:
        """``sha256:`` of the canonical list of every revision (kind, id, revision, content
        hash) and the checkpoint's seal: what the fork's signer signs."""
        rows = sorted(f"{getattr(r.kind, 'value', r.kind)}:{r.artifact_id}@{r.revision}"
                      f"#{r.content_hash}" for r in self.revisions())
        seal = self.checkpoint.get("_body_hash") if self.checkpoint else None
        text = json.dumps({"turn": self.turn, "revisions": rows, "checkpoint": seal},
                          sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _at_turn(history: list[Any], turn: int) -> Any | None:
    """The newest revision written by a research turn up to ``turn``."""
    found = [r for r in history if (write_turn(r) or 0) and (write_turn(r) or 0) <= turn]
    return found[-1] if found else None


def _before(history: list[Any], when: datetime) -> Any | None:
    found = [r for r in history if r.created_at <= when]
    return found[-1] if found else None


async def parent_state(store: Any, parent_id: str, principal: Any, turn: int, *,
                       verify_record: Any = None) -> ParentState:
    """The parent's state after research turn ``turn``; ``ForkRefused`` when the parent
    has no such turn or a revision fails its content hash, attestation or seal.
    ``verify_record(rec)`` returns the attestation verdict (``ArtifactStore.verify``);
    ``None`` skips that check (a client without the worker's keys)."""
    try:
        return await _parent_state(store, parent_id, principal, turn, verify_record)
    except IntegrityError as exc:
        raise ForkRefused(f"refused: job {parent_id}'s state at turn {turn} cannot be "
                          f"verified: {exc}") from None


async def _get(store: Any, rec: Any, principal: Any, verify_record: Any) -> tuple[Any, bytes]:
    got, body = await store.get(rec.kind, rec.artifact_id, principal=principal,
                                revision=rec.revision)
    if "sha256:" + hashlib.sha256(body).hexdigest() != got.content_hash:
        raise IntegrityError(str(getattr(got.kind, "value", got.kind)), got.artifact_id,
                             got.revision, got.content_hash, "its bytes' hash")
    if verify_record is not None:
        verdict = verify_record(got)
        if verdict.status == "invalid":
            kind = getattr(got.kind, "value", got.kind)
            raise ForkRefused(f"refused: {kind}/{got.artifact_id} revision {got.revision} "
                              f"fails its attestation check ({verdict.detail})")
    return got, body


async def _parent_state(store: Any, parent_id: str, principal: Any, turn: int,
                        verify_record: Any) -> ParentState:
    chunk = (turn - 1) // CHUNK_TURNS
    tools_hist = await store.history("tool_record", tools_chunk_id(parent_id, chunk),
                                     principal=principal)
    at_turn = [r for r in tools_hist if write_turn(r) == turn]
    if not at_turn:
        raise ForkRefused(f"refused: job {parent_id} has no recorded research turn {turn}")
    when = at_turn[-1].created_at
    spec_rec = _before(await store.history("job_spec", parent_id, principal=principal), when)
    if spec_rec is None:
        raise ForkRefused(f"refused: job {parent_id} has no stored spec before turn {turn}")
    spec_rec, spec_body = await _get(store, spec_rec, principal, verify_record)
    state = ParentState(spec=JobSpec.model_validate_json(spec_body), spec_rec=spec_rec,
                        turn=turn)
    plan = _before(await store.history("research_plan", f"{parent_id}.plan",
                                       principal=principal), when)
    if plan is not None:
        state.plan = await _get(store, plan, principal, verify_record)
    for number in range(chunk + 1):
        tool_id = tools_chunk_id(parent_id, number)
        rec = _at_turn(await store.history("tool_record", tool_id, principal=principal), turn)
        if rec is not None:
            state.tools.append(await _get(store, rec, principal, verify_record))
        notes = _at_turn(await store.history("evidence_pack", notes_chunk_id(parent_id, number),
                                             principal=principal), turn)
        if notes is not None:
            state.notes.append(await _get(store, notes, principal, verify_record))
    plan_rec = _at_turn(await store.history("agent_plan", plan_artifact_id(parent_id),
                                            principal=principal), turn)
    if plan_rec is not None:
        state.agent_plan = await _get(store, plan_rec, principal, verify_record)
    turns = {(r.artifact_id, r.revision): write_turn(r) or 0 for r, _ in state.tools}
    for number in range(chunk + 1):  # every revision of the chunks, for the checkpoints
        for rec in await store.history("tool_record", tools_chunk_id(parent_id, number),
                                       principal=principal):
            turns.setdefault((rec.artifact_id, rec.revision), write_turn(rec) or 0)
    for body in await store.checkpoints(parent_id, principal=principal):
        held = [ref for ref in body.get("artifact_refs") or []
                if ref.get("kind") == "tool_record"]
        held_turn = max((turns.get((ref.get("artifact_id"), ref.get("revision")), turn + 1)
                         for ref in held), default=0)
        if held_turn <= turn:
            state.checkpoint = body
    calls = [c for _, body in state.tools for c in json.loads(body)["calls"]]
    for call in calls:
        heads = await store.history("tool_record", exchange_artifact_id(parent_id, call["call_id"]),
                                    principal=principal)
        if heads:
            state.exchanges.append(await _get(store, heads[-1], principal, verify_record))
    return state


__all__ = ["CHUNK_TURNS", "ParentState", "call_turn", "parent_state", "write_turn"]
