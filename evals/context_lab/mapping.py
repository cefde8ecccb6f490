"""How lab records become engine inputs (``ContextItem``, scopes, clearance).

Both strategies build items through this one module, so the baseline renders and counts
exactly the same evidence blocks the engine does. Choices, written down:

* ``sensitivity`` and ``clearance`` are levels of ``SECURITY_LEVEL`` (0 public … 4 secret).
* ``source_type``: the explicit field, else ``kind`` when it is an engine ``SourceType``,
  else ``official_document`` (lab sources are fixed documents written by the case author).
* Lab ``trust: trusted`` becomes ``repository_evidence`` for repository sources and
  ``external_evidence`` otherwise — both are admissible as evidence (role
  ``untrusted_data``, i.e. inside a data block) under the default policy, whose per-source
  ceiling still applies (a "trusted" web page is capped at ``untrusted_external_data``).
* Lab ``trust: untrusted`` becomes ``unvetted_external_data``, the engine's label for
  third-party text nobody vouches for: never evidence, at most quoted data if the policy
  allows it (the shipped policies give it no role, so the engine's trust-role gate refuses
  it; docs/context-engine.md#untrusted-lab-sources). Nothing is filtered here: the engine
  decides.
* Any engine trust label is passed through and left to the policy.
* Dates: ``updated_at`` is the document's own date and becomes the item's
  ``source_date`` (recorded, orders revisions, never ages the item); ``observed_at`` — when
  the content was read, which the freshness gate ages — is the source's own
  ``observed_at`` when the dataset states one, else the case's ``as_of`` (the lab reads
  every candidate from the fixed file when the case runs). A caller without a case
  (``as_of=None``) gets the document's date as a stand-in.
* ``intended_role``: the explicit field, else ``untrusted_data`` when the policy allows it
  for the item's trust, else the first role the policy allows.
* Scopes: a source without ``scope`` lives in the lab project ``lab/context`` (a project
  prefix covering every task); a case without ``scope`` runs as task ``lab/context/<id>``.
* A repository locator of the form ``repo@commit:path#L<a>-L<b>`` fills the code ref that
  the integrity gate needs; an ``http(s)://`` locator becomes the url.
"""

from __future__ import annotations

import re
from datetime import datetime

from context import (
    SECURITY_LEVEL,
    AcquisitionOutcome,
    ContextItem,
    ContextPolicy,
    Role,
    ScopeRef,
    SecurityClass,
    SourceRef,
    SourceType,
    Trust,
)
from evals.context_lab.dataset import LabCase, LabSource

LAB_SCOPE = ScopeRef(tenant="lab", project="context")
PRODUCER = "context-lab/sources.jsonl"
_CODE_LOCATOR = re.compile(r"^(?P<repo>[^@\s]+)@(?P<commit>[0-9a-fA-F]{7,40}):(?P<path>[^#\s]+)"
                           r"#L(?P<a>\d+)-L(?P<b>\d+)$")
_LEVEL_CLASS = {level: cls for cls, level in SECURITY_LEVEL.items()}
UNTRUSTED_LABELS = frozenset({Trust.UNTRUSTED_EXTERNAL_DATA, Trust.UNVETTED_EXTERNAL_DATA,
                              Trust.PROJECT_EDITABLE})


def security_class(level: int) -> SecurityClass:
    return _LEVEL_CLASS[level]


def source_type_of(source: LabSource) -> SourceType:
    if source.source_type is not None:
        return source.source_type
    if source.kind in {t.value for t in SourceType}:
        return SourceType(source.kind)
    return SourceType.OFFICIAL_DOCUMENT


def trust_of(source: LabSource) -> Trust:
    if source.trust == "trusted":
        if source_type_of(source) is SourceType.REPOSITORY_SOURCE:
            return Trust.REPOSITORY_EVIDENCE
        return Trust.EXTERNAL_EVIDENCE
    if source.trust == "untrusted":
        return Trust.UNVETTED_EXTERNAL_DATA
    return Trust(source.trust)


def is_untrusted(source: LabSource) -> bool:
    """Untrusted text for the trust-zone grader: lab ``untrusted`` or a low engine label."""
    return source.trust == "untrusted" or trust_of(source) in UNTRUSTED_LABELS or (
        source_type_of(source) in {SourceType.WEB_PAGE, SourceType.EDITABLE_PROJECT_FILE,
                                   SourceType.AGENT_OUTPUT})


def source_ref_of(source: LabSource) -> SourceRef:
    m = _CODE_LOCATOR.match(source.locator)
    if m:
        return SourceRef(repo=m["repo"], commit=m["commit"], path=m["path"],
                         line_start=int(m["a"]), line_end=int(m["b"]),
                         revision=source.revision, locator=source.locator)
    if source.locator.startswith(("http://", "https://")):
        return SourceRef(url=source.locator, locator=source.locator, revision=source.revision)
    return SourceRef(locator=source.locator, revision=source.revision)


def role_of(source: LabSource, policy: ContextPolicy) -> Role:
    if source.intended_role is not None:
        return source.intended_role
    allowed = policy.role_limits.get(trust_of(source), ())
    if Role.UNTRUSTED_DATA in allowed or not allowed:
        return Role.UNTRUSTED_DATA
    return allowed[0]


def acquisition_id(source_id: str) -> str:
    return f"acq-{source_id}"


def observed_at_of(source: LabSource, as_of: datetime | None) -> datetime:
    """When the lab read ``source``: its stated ``observed_at``, else the case's ``as_of``
    (else, without a case, the document's own date)."""
    return source.observed_at or as_of or source.updated_at


def source_to_item(source: LabSource, policy: ContextPolicy, *,
                   as_of: datetime | None = None) -> ContextItem:
    """The candidate item for ``source`` (same item for every strategy); ``as_of`` is the
    case's (see the module docstring, "Dates")."""
    fields: dict[str, object] = {
        "item_id": source.id,
        "source_request_id": acquisition_id(source.id),
        "source_ref": source_ref_of(source),
        "source_type": source_type_of(source),
        "producer": PRODUCER,
        "content": source.content,
        "revision": source.revision,
        "scope": source.scope or LAB_SCOPE,
        "observed_at": observed_at_of(source, as_of),
        "source_date": source.updated_at,
        "valid_until": source.valid_until,
        "trust": trust_of(source),
        "intended_role": role_of(source, policy),
        "security_class": security_class(source.sensitivity),
        "topics": tuple(source.topics),
        "canonical_key": source.key,
        "authority": source.authority,
        "metadata": {"title": source.title, "kind": source.kind},
    }
    if source.content_hash is not None:
        fields["content_hash"] = source.content_hash
    return ContextItem.build(**fields)


def case_scope(case: LabCase) -> ScopeRef:
    return case.scope or ScopeRef(tenant=LAB_SCOPE.tenant, project=LAB_SCOPE.project,
                                  task=case.id)


def retrieved() -> AcquisitionOutcome:
    """Every lab candidate was fetched from the fixed file (no retrieval can fail here)."""
    return AcquisitionOutcome.RETRIEVED
