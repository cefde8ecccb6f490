"""Candidate items and their provenance: the input side of every assembly
(docs/context-engine.md#candidates-and-acquisition-outcomes).

A ``ContextItem`` carries everything the hard gates need to decide admission without
looking anything up: where it came from (``source_ref`` plus ordered ``source_lineage``),
who produced it, its content and hash, the revision it claims, its scope, when it was
observed and until when it is valid, its trust label and intended role, its security
class and completeness.

Two dates, never confused: ``observed_at`` is when the content was read (the acquisition's
clock; the freshness gate ages an observation of live state by it), ``source_date`` the
date the source gives itself (publication or last revision). An old document read today
is a fresh observation; the source's date orders revisions of one document (supersession)
and is recorded, but never ages an item.

Items are frozen value objects; the engine never mutates one, it derives new ones
(excerpts, summaries) and records the transform.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from context.vocabulary import (
    AcquisitionOutcome,
    AttestationStatus,
    Completeness,
    Freshness,
    LoadMode,
    Role,
    SecurityClass,
    SourceType,
    Trust,
)

#: the longest item id a request may give (``AssemblyRequest`` checks its candidates)
_ID_MAX = 200
#: the engine's own items prefix an id of the request — ``tool-result:<call_id>``,
#: ``step:<stage>`` — whose ids are at most ``_ID_MAX`` too; an item leaves room for that
_ENGINE_ID_MAX = _ID_MAX + len("tool-result:")


def sha256_text(text: str) -> str:
    """``sha256:<hex>`` of the UTF-8 bytes of ``text`` (the engine's one hash format)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScopeRef(_Frozen):
    """tenant / project / task. ``task=None`` means the whole project (a prefix scope)."""

    tenant: str = Field(min_length=1)
    project: str = Field(min_length=1)
    task: str | None = None

    def covers(self, other: ScopeRef) -> bool:
        """True when ``other`` lies inside this scope."""
        if self.tenant != other.tenant or self.project != other.project:
            return False
        return self.task is None or self.task == other.task

    def __str__(self) -> str:
        base = f"{self.tenant}/{self.project}"
        return base if self.task is None else f"{base}/{self.task}"

    @classmethod
    def parse(cls, text: str) -> ScopeRef:
        """Parse ``tenant/project[/task]``; anything else is a ``ValueError``."""
        parts = text.split("/")
        if len(parts) not in (2, 3) or any(not p for p in parts):
            raise ValueError(
                f"scope must be 'tenant/project' or 'tenant/project/task', got {text!r}"
            )
        return cls(tenant=parts[0], project=parts[1], task=parts[2] if len(parts) == 3 else None)



def visible(viewer: ScopeRef, item: ScopeRef) -> bool:
    """Project-wide items are visible to every task of the project; task items to that task."""
    if viewer.tenant != item.tenant or viewer.project != item.project:
        return False
    return item.task is None or viewer.task is None or viewer.task == item.task


def scope_matches(request: ScopeRef, item: ScopeRef) -> bool:
    """Stricter than :func:`visible`: a project-level request sees only project-level items."""
    if request.tenant != item.tenant or request.project != item.project:
        return False
    return item.task is None or item.task == request.task


class SourceRef(_Frozen):
    """Direct source of an item. Code evidence needs repo, commit, path and a line range."""

    repo: str | None = None
    commit: str | None = None
    path: str | None = None
    line_start: int | None = Field(default=None, ge=1)
    line_end: int | None = Field(default=None, ge=1)
    artifact_kind: str | None = None
    artifact_id: str | None = None
    revision: str | None = None
    url: str | None = None
    locator: str | None = None

    @model_validator(mode="after")
    def _line_range_ordered(self) -> SourceRef:
        if (self.line_start is None) != (self.line_end is None):
            raise ValueError("line_start and line_end must be given together")
        if self.line_start is not None and self.line_end is not None:
            if self.line_end < self.line_start:
                raise ValueError(f"line range {self.line_start}-{self.line_end} is reversed")
        return self

    @property
    def is_complete_code_ref(self) -> bool:
        return bool(self.repo and self.commit and self.path and self.line_start and self.line_end)

    def citation(self) -> str:
        """``repo@commit:path#Lx-Ly`` for code, else the most specific locator available."""
        if self.repo and self.commit and self.path:
            lines = f"#L{self.line_start}-L{self.line_end}" if self.line_start else ""
            return f"{self.repo}@{self.commit}:{self.path}{lines}"
        if self.artifact_id:
            rev = f"@{self.revision}" if self.revision else ""
            return f"{self.artifact_kind or 'artifact'}:{self.artifact_id}{rev}"
        return self.url or self.locator or "unknown-source"


class AttestationCheck(_Frozen):
    """The runtime's check of the signature of the stored revision an item was read from:
    its verdict, the key id that verified it, and why when it did not."""

    status: AttestationStatus
    key_id: str | None = None
    detail: str = ""


class LineageNode(_Frozen):
    """One step of an item's derivation chain, oldest first."""

    node_id: str = Field(min_length=1)
    type: str = Field(min_length=1)
    input_node_ids: tuple[str, ...] = ()
    digest: str | None = None


class ContextItem(_Frozen):
    """A candidate for the model-visible working set
    (docs/context-engine.md#candidates-and-acquisition-outcomes plus topics/authority).

    ``content`` must be text; bytes that are not valid UTF-8 are rejected here with a
    clear error, never passed on to the tokenizer. ``content_hash`` is the hash the
    source *claims*; the integrity gate re-hashes ``content`` and compares. A hash the
    writer can recompute proves nothing against whoever can write the store; the
    ``attestation`` (the runtime's check of the stored revision's signature) does.
    """

    item_id: str = Field(min_length=1, max_length=_ENGINE_ID_MAX)
    source_request_id: str | None = None
    source_ref: SourceRef = SourceRef()
    source_lineage: tuple[LineageNode, ...] = ()
    source_type: SourceType
    producer: str = Field(min_length=1)
    content: str
    content_hash: str
    revision: str | None = None
    scope: ScopeRef
    observed_at: datetime | None = None
    valid_until: datetime | None = None
    source_date: datetime | None = None
    freshness: Freshness | None = None
    trust: Trust
    intended_role: Role
    security_class: SecurityClass = SecurityClass.INTERNAL
    completeness: Completeness = Completeness.COMPLETE
    estimated_tokens: int | None = Field(default=None, ge=0)
    topics: tuple[str, ...] = ()
    canonical_key: str | None = None
    authority: int = 0
    load_mode: LoadMode | None = None
    summary: str | None = None
    claim: str | None = None
    required: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Scopes of everything this item was derived from (a summary of another task's items
    # carries that task here); the security gate denies any origin outside the request.
    origin_scopes: tuple[ScopeRef, ...] = ()
    # Stages this item is relevant to (empty: any stage); a ranking signal, never a gate.
    stages: tuple[str, ...] = ()
    # The signature check of the stored revision the content came from (``None``: the item
    # was not read from an artifact revision); the integrity gate refuses ``invalid``.
    attestation: AttestationCheck | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content_is_text(cls, value: object) -> object:
        if isinstance(value, bytes | bytearray):
            try:
                return bytes(value).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"content is not valid UTF-8 (byte {exc.start}): decode or exclude it "
                    "before assembly"
                ) from exc
        if isinstance(value, str):
            # Lone surrogates (e.g. from surrogateescape decoding) cannot be encoded as
            # UTF-8: reject here rather than crash later inside hashing or the tokenizer.
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"content is not valid UTF-8 text (unpaired surrogate at index {exc.start})"
                ) from exc
        return value

    @field_validator("item_id")
    @classmethod
    def _id_printable(cls, value: str) -> str:
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError(f"item_id {value!r} contains control characters")
        return value

    @property
    def key(self) -> str:
        """Canonical key for supersession; defaults to the item id."""
        return self.canonical_key or self.item_id

    @classmethod
    def build(cls, **fields: Any) -> ContextItem:
        """Construct an item, computing ``content_hash`` from ``content`` when absent."""
        if "content_hash" not in fields and isinstance(fields.get("content"), str):
            fields["content_hash"] = sha256_text(fields["content"])
        return cls(**fields)


class SourceAcquisition(_Frozen):
    """What happened when a source was asked for (``source_acquisition``,
    docs/context-engine.md#candidates-and-acquisition-outcomes)."""

    source_request_id: str = Field(min_length=1)
    source_type: str
    source_id: str
    revision: str | None = None
    outcome: AcquisitionOutcome
    result_digest: str | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _reason_when_not_retrieved(self) -> SourceAcquisition:
        if self.outcome is not AcquisitionOutcome.RETRIEVED and not self.reason:
            raise ValueError(f"acquisition {self.source_request_id}: {self.outcome} needs a reason")
        return self
