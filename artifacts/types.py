"""Value objects of the artifact store: who acts (Principal), where (Scope), on what kind.

They are frozen pydantic models so they travel through Temporal payloads and manifests
unchanged. Identifier rules live in ``ids`` so the store and these models agree.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from artifacts.ids import check_identifier

__all__ = ["ArtifactKind", "ArtifactRecord", "Attestation", "Principal", "Scope"]


class ArtifactKind(StrEnum):
    """Every kind of artifact the store accepts; anything else is ``InvalidArtifact``."""

    JOB_SPEC = "job_spec"
    RESEARCH_PLAN = "research_plan"
    SOURCE_RECORDS = "source_records"
    EVIDENCE_PACK = "evidence_pack"
    ARTICLE_DRAFT = "article_draft"
    REVIEW_DECISION = "review_decision"
    PUBLISH_RECEIPT = "publish_receipt"
    CHECKPOINT = "checkpoint"
    WORKSPACE_FILE = "workspace_file"
    TOOL_RECORD = "tool_record"
    WEB_PAGE = "web_page"
    DOCUMENT = "document"
    MODEL_DECISION = "model_decision"
    AGENT_PLAN = "agent_plan"
    #: the review console's audit log: one event per revision (``webconsole.audit``)
    AUDIT_LOG = "audit_log"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Scope(_Frozen):
    """Where a record lives: tenant / project / task (task is recorded, not a read boundary)."""

    tenant: str
    project: str
    task: str

    @field_validator("tenant", "project", "task")
    @classmethod
    def _ident(cls, value: str) -> str:
        return check_identifier(value, "scope field")

    def __str__(self) -> str:
        return f"{self.tenant}/{self.project}/{self.task}"


class Principal(_Frozen):
    """Who reads or writes; may only touch records of its own tenant and project."""

    principal_id: str
    tenant: str
    project: str

    @field_validator("principal_id", "tenant", "project")
    @classmethod
    def _ident(cls, value: str) -> str:
        return check_identifier(value, "principal field")

    def covers(self, tenant: str, project: str) -> bool:
        """True when a record of ``tenant``/``project`` is inside this principal's reach."""
        return self.tenant == tenant and self.project == project

    def __str__(self) -> str:
        return f"{self.principal_id} ({self.tenant}/{self.project})"


class Attestation(_Frozen):
    """A revision's signature as stored: which attestation key signed it and the
    HMAC-SHA256 (hex) over the revision's fields (``artifacts.attestation``)."""

    key_id: str
    mac: str


class ArtifactRecord(_Frozen):
    """One immutable revision of an artifact, as stored (the body travels separately).

    ``attestation`` is ``None`` for a revision written without an attestation key; whether
    a stored one is genuine is for a keyring to say (``artifacts.attestation.Keyring.verify``),
    never for the record itself.
    """

    kind: ArtifactKind
    artifact_id: str
    revision: int = Field(ge=1)
    content_hash: str
    writer: str
    scope: Scope
    trust: str
    created_at: datetime
    parent_revision: int | None
    size: int = Field(ge=0)
    media_type: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    attestation: Attestation | None = None
