"""The Context Packet: one strategy's answer to one case, in a shape graders can judge.

Every strategy (the three baselines and the Pressroom engine) is reduced to this one
structure so that the graders never know which strategy produced a packet
(docs/context-engine.md#packets-and-fingerprints, §14: grade the structured packet, not the
prose). A packet holds what was selected (with the token count of each rendered evidence
block), what was excluded and why, what is missing, the budget, the acquisition outcome of
every candidate, the model-visible messages and tool exchange (for the pairing and trust-zone
graders), and — when the strategy seals one — a reference to the manifest with its hashes.

The ``fingerprint`` identifies the *selection*
(docs/context-engine.md#packets-and-fingerprints): strategy, case, ordered selected ids with
their content hashes, ``as_of`` and the policy identity. It is not a proof of the full model
input; the manifest's ``serialized_model_input_hash`` is.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SelectedEntry(_Model):
    id: str
    tokens: int = Field(ge=0)
    item_id: str  # the engine item that carries it (differs for excerpts / redactions)
    locator: str | None
    updated_at: str | None
    content_hash: str | None


class ExcludedEntry(_Model):
    """An exclusion: the reason, the hard gate that refused it (``None`` when no hard gate
    did: supersession, coverage, budget) and the refusal's detail as the strategy states
    it (for the engine, the manifest's)."""

    id: str
    reason: str
    gate: str | None = None
    detail: str | None = None


class AcquisitionEntry(_Model):
    id: str
    outcome: str


class VisibleMessage(_Model):
    """One model-visible message, reduced to its role and its text."""

    role: str
    text: str


class ToolEvent(_Model):
    """A tool call or result as the model sees it; ``message`` is its message index."""

    kind: Literal["call", "result"]
    call_id: str
    message: int


class AnomalyRecord(_Model):
    type: str
    call_id: str


class ManifestRef(_Model):
    manifest_id: str
    status: str
    blocked_reason: str | None = None
    policy: dict[str, Any] = Field(default_factory=dict)
    candidate_set_digest: str | None = None
    assembly_input_hash: str | None = None
    serialized_model_input_hash: str | None = None


class Packet(_Model):
    case_id: str
    strategy: str
    status: Literal["ready", "blocked"] = "ready"
    selected: tuple[SelectedEntry, ...]
    excluded: tuple[ExcludedEntry, ...]
    missing_topics: tuple[str, ...]
    budget_used: int
    budget_limit: int
    acquisitions: tuple[AcquisitionEntry, ...]
    messages: tuple[VisibleMessage, ...] = ()
    tool_events: tuple[ToolEvent, ...] = ()
    anomalies: tuple[AnomalyRecord, ...] = ()
    rendered_context: str
    manifest: ManifestRef | None = None
    fingerprint: str

    @property
    def selected_ids(self) -> list[str]:
        return [s.id for s in self.selected]

    def visible_text(self) -> str:
        """Everything the model would read, message after message."""
        return "\n".join(m.text for m in self.messages)

    def report_line(self) -> dict[str, Any]:
        """The ``context-packets.jsonl`` record (field names fixed: evals/context/README.md)."""
        m = self.manifest
        return {
            "case_id": self.case_id,
            "strategy": self.strategy,
            "status": self.status,
            "selected": [{"id": s.id, "tokens": s.tokens} for s in self.selected],
            "excluded": [{"id": e.id, "reason": e.reason, "gate": e.gate, "detail": e.detail}
                         for e in self.excluded],
            "acquisitions": [{"id": a.id, "outcome": a.outcome} for a in self.acquisitions],
            "missing_topics": list(self.missing_topics),
            "budget": {"used": self.budget_used, "limit": self.budget_limit},
            "fingerprint": self.fingerprint,
            "manifest_id": m.manifest_id if m else None,
            "blocked_reason": m.blocked_reason if m else None,
            "hashes": {
                "candidate_set_digest": m.candidate_set_digest if m else None,
                "assembly_input_hash": m.assembly_input_hash if m else None,
                "serialized_model_input_hash": m.serialized_model_input_hash if m else None,
            },
            "rendered_context": self.rendered_context,
        }


def fingerprint(*, strategy: str, case_id: str, as_of: str,
                selected: list[tuple[str, str | None]], policy: dict[str, Any] | None) -> str:
    """``sha256:`` over the selection identity (see the module docstring)."""
    body = json.dumps(
        {"strategy": strategy, "case": case_id, "as_of": as_of,
         "selected": [[sid, h] for sid, h in selected], "policy": policy or {}},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()
