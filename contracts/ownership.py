"""Which stored artifacts and sealed records belong to which job.

Every artifact a job writes is named after its job id (``<job_id>.draft``,
``<job_id>.turn.0001``, ``<job_id>:tool:<call>``…) and every manifest and checkpoint
carries the job id as its ``run_id``; the store's scope check (tenant, project) holds on
every read. A reader that takes an artifact id from somewhere the job does not control
alone — a workflow's status, which anyone who can start a workflow can make up —
checks here first that the id is one of this job's, so a job can never be made to show
another job's content (SECURITY.md, "Tenant isolation").

Job ids never contain ``:`` (``contracts.job_spec``), and each kind has its own anchored
suffix, so ownership is unambiguous even for a job id such as ``a.draft``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from contracts.errors import JobError

#: the suffix each kind's ids carry after the job id (activities/*: ``*_id`` helpers)
_SUFFIXES: Mapping[str, str] = {
    "job_spec": r"",
    "research_plan": r"\.plan",
    "article_draft": r"\.draft",
    "review_decision": r"\.review",
    "model_decision": r"\.turn\.\d{4,}",
    "source_records": r"\.sources",
    "evidence_pack": r"\.evidence|\.notes\.t\d{4,}",
    "tool_record": r"\.tools(\.t\d{4,})?|:.+",
    "agent_plan": r"\.agent-plan",
}


class ForeignArtifact(JobError):
    """An artifact or record a reader was pointed at is not the job's own; nothing of it
    is read or shown."""


def owns(job_id: str, kind: str, artifact_id: str) -> bool:
    """Whether ``artifact_id`` of ``kind`` is one of ``job_id``'s own artifacts."""
    suffix = _SUFFIXES.get(str(kind))
    if suffix is None or not artifact_id.startswith(job_id):
        return False
    return re.fullmatch(f"(?:{suffix})", artifact_id[len(job_id):]) is not None


def check_owned(job_id: str, kind: str, artifact_id: str) -> None:
    """``ForeignArtifact`` unless ``artifact_id`` is ``job_id``'s own ``kind``."""
    if not owns(job_id, kind, artifact_id):
        raise ForeignArtifact(f"job {job_id!r} names {kind} {artifact_id!r}, which is not "
                              "its own; not read")


def check_record(job_id: str, tenant: str, project: str, record: Any) -> None:
    """``ForeignArtifact`` unless a read revision is ``job_id``'s own and lies in the job's
    tenant and project (the store checked the reader's scope; this checks the revision)."""
    check_owned(job_id, str(getattr(record.kind, "value", record.kind)), record.artifact_id)
    if (record.scope.tenant, record.scope.project) != (tenant, project):
        raise ForeignArtifact(f"job {job_id!r}: {record.artifact_id!r} lies in another "
                              "tenant or project; not read")


def check_manifest(job_id: str, manifest: Mapping[str, Any], manifest_id: str) -> None:
    """``ForeignArtifact`` unless a sealed manifest was written for ``job_id``."""
    if manifest.get("run_id") != job_id:
        raise ForeignArtifact(f"job {job_id!r} has no manifest {manifest_id!r}")


__all__ = ["ForeignArtifact", "check_manifest", "check_owned", "check_record", "owns"]
