"""Evidence records, and their mapping onto context items.

(Named ``evidence``: ``context.manifest_entries`` builds manifest entries and
``artifacts.sealed_records`` seals store records, which are other things entirely.)

An ``EvidenceRecord`` is one bounded excerpt of a source (docs/context-engine.md#source-limits: code
as excerpts with line ranges, test logs as failures plus an artifact ref, web pages as
relevant sections plus a content hash) with everything the context engine's hard gates
need: repo/commit/path/line range for code, URL and locator for pages, the content hash of
exactly the excerpt, the revision it belongs to, trust and topics.

A record is made from a verified note's citation (``activities.record_turn``): exactly
the lines the cited result showed, with the fields the citing tool gives its evidence.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from context import (
    Completeness,
    ContextItem,
    LineageNode,
    Role,
    ScopeRef,
    SecurityClass,
    SourceRef,
    SourceType,
    Trust,
)

# Evidence of any trust is rendered as data: even a pinned repository is not an instruction.
_ROLE_BY_TRUST: dict[Trust, Role] = {
    Trust.REPOSITORY_EVIDENCE: Role.UNTRUSTED_DATA,
    Trust.EXTERNAL_EVIDENCE: Role.UNTRUSTED_DATA,
    Trust.PROJECT_EDITABLE: Role.UNTRUSTED_DATA,
    Trust.UNTRUSTED_EXTERNAL_DATA: Role.UNTRUSTED_DATA,
}


class EvidenceRecord(BaseModel):
    """One excerpt of one source at one revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(min_length=1, max_length=200)
    call_id: str = Field(min_length=1)
    tool_name: str
    source_name: str
    source_type: SourceType
    repo: str | None = None
    commit: str | None = None
    path: str | None = None
    line_start: int | None = Field(default=None, ge=1)
    line_end: int | None = Field(default=None, ge=1)
    url: str | None = None
    locator: str | None = None
    content: str
    content_hash: str
    revision: str
    source_digest: str | None = Field(
        default=None, description="hash of the whole source object (blob, file, page)"
    )
    artifact_ref: str | None = Field(
        default=None, description="where the full object can be fetched (e.g. a git blob)"
    )
    observed_at: datetime
    valid_until: datetime | None = None
    trust: Trust
    security_class: SecurityClass = SecurityClass.INTERNAL
    completeness: Completeness = Completeness.EXCERPT
    topics: list[str] = Field(default_factory=list)
    canonical_key: str
    authority: int = 0
    #: for a research note: the call whose stored result showed the cited lines
    cited_call_id: str | None = None

    def citation(self) -> str:
        """``repo@commit:path#Lx-Ly`` for code, ``url#locator`` for pages, else the locator."""
        if self.repo and self.commit and self.path:
            return self.source_ref().citation()
        if self.url:
            return f"{self.url}#{self.locator}" if self.locator else self.url
        return self.locator or self.path or self.item_id

    def source_ref(self) -> SourceRef:
        return SourceRef(
            repo=self.repo,
            commit=self.commit,
            path=self.path,
            line_start=self.line_start,
            line_end=self.line_end,
            revision=self.revision,
            url=self.url,
            locator=self.locator,
            artifact_id=self.artifact_ref,
            artifact_kind="source_object" if self.artifact_ref else None,
        )


def to_context_item(record: EvidenceRecord, scope: ScopeRef) -> ContextItem:
    """A candidate item for the context engine, keeping the record's provenance intact.

    The lineage has two nodes, oldest first: the whole source object (with its digest when
    known) and the excerpt taken from it (with the excerpt's content hash).
    """
    source_node_id = f"source:{record.source_name}@{record.revision}"
    lineage = (
        LineageNode(node_id=source_node_id, type="source", digest=record.source_digest),
        LineageNode(
            node_id=f"excerpt:{record.item_id}",
            type="excerpt" if record.completeness is Completeness.EXCERPT else "read",
            input_node_ids=(source_node_id,),
            digest=record.content_hash,
        ),
    )
    metadata: dict[str, Any] = {"tool_name": record.tool_name, "source_name": record.source_name}
    if record.artifact_ref:
        metadata["artifact_ref"] = record.artifact_ref
    if record.cited_call_id:
        metadata["cited_call"] = record.cited_call_id
    return ContextItem(
        item_id=record.item_id,
        source_request_id=record.call_id,
        source_ref=record.source_ref(),
        source_lineage=lineage,
        source_type=record.source_type,
        producer=record.tool_name,
        content=record.content,
        content_hash=record.content_hash,
        revision=record.revision,
        scope=scope,
        observed_at=record.observed_at,
        valid_until=record.valid_until,
        trust=record.trust,
        intended_role=_ROLE_BY_TRUST.get(record.trust, Role.UNTRUSTED_DATA),
        security_class=record.security_class,
        completeness=record.completeness,
        topics=tuple(record.topics),
        canonical_key=record.canonical_key,
        authority=record.authority,
        metadata=metadata,
    )


