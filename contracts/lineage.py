"""A forked job's lineage: which job, run and research turn it started from, the hash of
the state it started from, every edit applied before its first turn, and the operator's
signature over all of that (docs/architecture.md#forking-a-job, SECURITY.md).

The lineage travels in the fork's spec (``JobSpec.lineage``), so it is stored with the
spec and shown wherever the spec is. It holds references and hashes only: a ``--plan``
file's text is stored in the artifact store by the CLI and named here by its revision and
sha256, never carried in workflow history.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from contracts.signing import Signature
from contracts.source_specs import SourceSpec

#: the most edits of one kind a fork may carry
MAX_EDITS = 20


class _Lineage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ForkPlan(_Lineage):
    """A ``--plan FILE`` edit: the agent-plan revision the CLI stored for the fork, and the
    sha256 of its text (the signature binds the hash; ``fork_state`` checks it)."""

    artifact_id: str = Field(min_length=1, max_length=200)
    revision: int = Field(ge=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ForkEdits(_Lineage):
    """What a fork changes before its first turn; every field empty means none."""

    add_sources: list[SourceSpec] = Field(default_factory=list, max_length=MAX_EDITS)
    refresh_sources: list[str] = Field(default_factory=list, max_length=MAX_EDITS)
    drop_sources: list[str] = Field(default_factory=list, max_length=MAX_EDITS)
    drop_notes: list[str] = Field(default_factory=list, max_length=MAX_EDITS)
    plan: ForkPlan | None = None
    question: str | None = Field(default=None, min_length=1, max_length=4000)
    token_budget: int | None = Field(default=None, gt=0)
    cost_budget_usd: str | None = Field(default=None, max_length=32)

    def names(self) -> list[str]:
        """One short label per edit (``explain --diff`` and the CLI say which were made)."""
        out = [f"add-source {s.name}" for s in self.add_sources]
        out += [f"refresh-source {n}" for n in self.refresh_sources]
        out += [f"drop-source {n}" for n in self.drop_sources]
        out += [f"drop-note {n}" for n in self.drop_notes]
        if self.plan is not None:
            out.append(f"plan sha256:{self.plan.sha256[:12]}")
        if self.question is not None:
            out.append("question")
        if self.token_budget is not None:
            out.append(f"token-budget {self.token_budget}")
        if self.cost_budget_usd is not None:
            out.append(f"cost-budget {self.cost_budget_usd}")
        return out


class ForkLineage(_Lineage):
    """Where a fork came from. ``signature`` is a parent operator's (or reviewer's)
    Ed25519 signature, purpose ``fork``, over ``signed_body()`` for the parent job id."""

    parent_job: str = Field(min_length=1, max_length=200)
    #: the parent's first run id: a fork signed for an earlier job of the same id is refused
    parent_run_id: str = Field(min_length=1, max_length=200)
    turn: int = Field(ge=1)
    #: ``sha256:`` of the canonical list of the parent's revisions and checkpoint the fork
    #: starts from (``activities.fork_state.state_hash``)
    state_hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    new_job: str = Field(min_length=1, max_length=200)
    edits: ForkEdits = ForkEdits()
    signature: Signature | None = None

    def signed_body(self) -> dict[str, object]:
        return self.model_dump(mode="json", exclude={"signature"})

    def label(self) -> str:
        """``<parent>@turn N``: what an inherited item is marked with."""
        return f"{self.parent_job}@turn {self.turn}"


__all__ = ["MAX_EDITS", "ForkEdits", "ForkLineage", "ForkPlan"]
