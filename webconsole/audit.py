"""The review console's audit log: every console action, as ``audit_log`` artifacts.

``AuditLog(store).record(event)`` appends one ``AuditEvent`` — who (the normalized reviewer
name, or ``anonymous``), did what (``sign_in``, ``decision``, ``view_draft``, …), to which
job, with which outcome — to the artifact store:

* an event about a job goes to the artifact ``<job_id>.audit`` in the job's tenant/project
  (the caller passes the tenant and project of the job's spec, never ones a request names);
* an event with no job but a tenant/project goes to one artifact per tenant/project,
  ``console.<len(tenant)>.<tenant>.<project>.log`` (the length prefix keeps two
  tenant/project pairs from sharing an id, the ``.log`` ending keeps it apart from every
  job's ``.audit`` id);
* an event with neither (a sign-in, a sign-out: a reviewer is not signed in to one tenant)
  goes to the console-wide log, the same kind of artifact in the reserved scope
  ``CONSOLE_TENANT`` / ``CONSOLE_PROJECT`` (``pressroom-console/console``; give no job
  that tenant).

**One event per revision.** The store's revisions are append-only and immutable, each
built on its parent with an optimistic check (``parent_revision``; a stale parent is
``RevisionConflict``). Appending an event is exactly that: a new revision on the head, its
revision number the event's sequence number, its ``created_at`` and writer recorded by the
store, and signed like every revision when the store has an attestation key. Storing the
whole list in each revision instead would rewrite every earlier event on every append
(quadratic bytes, and each revision a new blob), for nothing the revision chain does not
already give. Two writers racing for the same head: the loser re-reads the head and
appends again (``record`` retries a few times).

Scope: the store's own tenant/project check applies — ``events`` for another tenant's job
sees nothing (an empty list: the store never says whether an id exists elsewhere), a
direct ``get`` is ``ScopeDenied``, and another tenant cannot append to a job's log
(``ScopeDenied``: the id is held outside its tenant/project).

``record`` raises the store's errors (``artifacts.StoreError`` and its subclasses); the
console should treat an action whose audit event could not be stored as failed. The
``detail`` field is short free text for humans and must never carry a password, a token,
a hash or key material — the console passes fixed phrases.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from artifacts import ArtifactKind, Principal, RevisionConflict, Scope, Store
from artifacts.ids import check_identifier

__all__ = ["ANONYMOUS", "CONSOLE_PRINCIPAL", "CONSOLE_PROJECT", "CONSOLE_TENANT",
           "KNOWN_ACTIONS", "AuditEvent", "AuditLog", "audit_artifact_id"]

#: the actor of an event nobody signed in for
ANONYMOUS = "anonymous"
#: the store principal the console writes and reads its audit log as
CONSOLE_PRINCIPAL = "pressroom-console"
#: the store scope of console-wide events (no job, no tenant): sign-in, sign-out
CONSOLE_TENANT = "pressroom-console"
CONSOLE_PROJECT = "console"
#: the task recorded on audit revisions (a task is recorded, not a read boundary)
_TASK = "console"
_TRUST = "trusted_state"
_MAX_RETRIES = 20
#: the longest actor and detail kept (longer text is cut, ending in "…")
_LIMITS = {"actor": 200, "detail": 500}
#: the actions the console records (an action outside this list is still accepted if it is
#: a lowercase token, so a new page can record a new action)
KNOWN_ACTIONS = ("sign_in", "sign_in_failed", "sign_in_throttled", "sign_out", "token_sign_in",
                 "token_sign_in_failed", "view_job", "view_draft", "decision",
                 "decision_refused")


class AuditEvent(BaseModel):
    """One console action. ``detail`` is short text for humans: never a secret.

    ``job_id`` needs ``tenant`` and ``project`` (the job's own); an event with neither is
    console-wide. ``outcome``: ``ok``, ``refused``, ``failed``, or a decision's name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    #: the normalized reviewer name, or ``anonymous``
    actor: str = Field(min_length=1, max_length=_LIMITS["actor"])
    action: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    job_id: str | None = None
    tenant: str | None = None
    project: str | None = None
    outcome: str = Field(default="ok", pattern=r"^[a-z][a-z0-9_]{0,63}$")
    detail: str = Field(default="", max_length=_LIMITS["detail"])

    @classmethod
    def now(cls, **fields: Any) -> AuditEvent:
        """An event happening now (``at`` is the current UTC time)."""
        return cls(at=datetime.now(UTC), **fields)

    @field_validator("tenant", "project")
    @classmethod
    def _ident(cls, value: str | None) -> str | None:
        return None if value is None else check_identifier(value, "audit scope field")

    @model_validator(mode="after")
    def _scoped(self) -> AuditEvent:
        if (self.tenant is None) != (self.project is None):
            raise ValueError("tenant and project go together")
        if self.job_id is not None and self.tenant is None:
            raise ValueError("an event about a job needs the job's tenant and project")
        return self

    @field_validator("job_id")
    @classmethod
    def _job(cls, value: str | None) -> str | None:
        return None if value is None else check_identifier(value, "audit job id")

    @field_validator("actor", "detail", mode="before")
    @classmethod
    def _one_line(cls, value: object, info: ValidationInfo) -> object:
        """Text a request supplied (a typed name, an error message) is kept, not refused —
        an audit write must not fail on it: every non-printable character (a newline, a
        bidi control) is written as ``\\uXXXX`` and the result cut to the field's limit."""
        if not isinstance(value, str):
            return value
        text = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in value)
        limit = _LIMITS[info.field_name or ""]
        return text if len(text) <= limit else text[:limit - 1] + "…"

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("must carry a time zone")
        return value.astimezone(UTC)


def audit_artifact_id(job_id: str | None, tenant: str | None,
                      project: str | None) -> str:
    """The ``audit_log`` artifact an event of ``job_id`` (or of no job) goes to."""
    if job_id is not None:
        return f"{job_id}.audit"
    tenant, project = _scope_of(tenant, project)
    return f"console.{len(tenant)}.{tenant}.{project}.log"


def _scope_of(tenant: str | None, project: str | None) -> tuple[str, str]:
    if tenant is None or project is None:
        return CONSOLE_TENANT, CONSOLE_PROJECT
    return tenant, project


class AuditLog:
    """Append and read console audit events in ``store`` (an ``artifacts.ArtifactStore``,
    or anything with its ``put`` / ``get`` / ``head`` / ``history``)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def record(self, event: AuditEvent) -> None:
        """Append ``event`` as the next revision of its log (see the module docstring)."""
        artifact_id = audit_artifact_id(event.job_id, event.tenant, event.project)
        tenant, project = _scope_of(event.tenant, event.project)
        principal = _principal(tenant, project)
        body = json.dumps(event.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")
        scope = Scope(tenant=tenant, project=project, task=_TASK)
        for attempt in range(_MAX_RETRIES):
            head = await self._store.head(ArtifactKind.AUDIT_LOG, artifact_id,
                                          principal=principal)
            try:
                await self._store.put(
                    ArtifactKind.AUDIT_LOG, artifact_id, body, principal=principal,
                    scope=scope, trust=_TRUST,
                    parent_revision=head.revision if head is not None else None,
                    media_type="application/json",
                    metadata={"action": event.action, "outcome": event.outcome})
                return
            except RevisionConflict:
                if attempt == _MAX_RETRIES - 1:
                    raise

    async def events(self, job_id: str | None, tenant: str | None,
                     project: str | None) -> list[AuditEvent]:
        """Every event of ``job_id``'s log (``None``: the tenant/project's log of events
        with no job; all three ``None``: the console-wide log), oldest first; empty when
        none is visible in ``tenant``/``project``."""
        artifact_id = audit_artifact_id(job_id, tenant, project)
        principal = _principal(*_scope_of(tenant, project))
        found: list[AuditEvent] = []
        for rec in await self._store.history(ArtifactKind.AUDIT_LOG, artifact_id,
                                             principal=principal):
            _rec, raw = await self._store.get(ArtifactKind.AUDIT_LOG, artifact_id,
                                              principal=principal, revision=rec.revision)
            try:
                event = AuditEvent.model_validate_json(raw)
            except ValidationError:
                raise ValueError(f"audit_log/{artifact_id} revision {rec.revision} is not "
                                 "an audit event") from None
            if event.job_id == job_id and (event.tenant, event.project) == (tenant, project):
                found.append(event)
        return found


def _principal(tenant: str, project: str) -> Principal:
    return Principal(principal_id=CONSOLE_PRINCIPAL, tenant=tenant, project=project)
