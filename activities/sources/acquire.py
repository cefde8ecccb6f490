"""``acquire``: run one source acquisition as a recorded tool call.

Every acquisition — successful or not — yields an ``AcquisitionResult`` holding a
``ToolCall`` (call id, tool name, canonical arguments) and its ``ToolResult`` (status,
a compact JSON summary of what was found, and the hash of that summary). The arguments
are the spec's values as written (placeholders unexpanded) plus the sorted topic terms,
so the argument hash is the same on every machine. The summary lists record ids,
citations and content hashes rather than excerpt text: the excerpts travel as records.

Outcomes: ``retrieved`` (possibly with zero records — the topics found nothing, which
is reported in ``missing_topics``), ``not_retrieved`` (nothing readable there),
``retrieval_failed`` (the tool failed; the reason says why). Tool status: ``error`` for a
failed retrieval, ``partial`` when warnings say something was skipped or capped,
otherwise ``success``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from activities.sources.documents import TOOL_NAME as DOCUMENT_TOOL
from activities.sources.documents import acquire_documents
from activities.sources.errors import NothingToRetrieve, RetrievalFailed
from activities.sources.evidence import AcquisitionResult, Gathered
from activities.sources.gitrepo import DEFAULT_TIMEOUT_S, acquire_git
from activities.sources.gitrepo import TOOL_NAME as GIT_TOOL
from activities.sources.toolrecord import (
    ToolCall,
    ToolResult,
    canonical_argument_hash,
    canonical_json,
    result_hash,
)
from activities.sources.webpages import TOOL_NAME as WEB_TOOL
from activities.sources.webpages import acquire_web_page
from context.admission.security import redact_secrets
from context.vocabulary import AcquisitionOutcome, ToolStatus
from contracts.path_safety import PathRoots
from contracts.source_specs import (
    DocumentSourceSpec,
    GitSourceSpec,
    SourceSpec,
    TopicTerms,
    WebPageSourceSpec,
)

if TYPE_CHECKING:
    from activities.sources.web_revisions import WebPages

TOOL_NAMES = {"git": GIT_TOOL, "document": DOCUMENT_TOOL, "web_page": WEB_TOOL}


def tool_arguments(spec: SourceSpec, topics: Sequence[TopicTerms]) -> dict[str, Any]:
    """The canonical arguments of the acquisition tool call for ``spec``. A git source's
    ``ref`` is left out: the tool reads the pinned commit, whatever name it came from."""
    args: dict[str, Any] = spec.model_dump(mode="json", exclude={"kind", "ref"})
    if isinstance(spec, WebPageSourceSpec) and spec.live:
        del args["path"]  # a live page names only its URL
    args["topics"] = [
        {"name": t.name, "terms": sorted(set(t.terms))}
        for t in sorted(topics, key=lambda t: t.name)
    ]
    return args


async def _gather(
    spec: SourceSpec, topics: Sequence[TopicTerms], call_id: str, as_of: datetime,
    timeout: float, locations: Mapping[str, str], roots: PathRoots,
    web_pages: WebPages | None = None,
) -> Gathered:
    if isinstance(spec, GitSourceSpec):
        return await acquire_git(spec, topics, call_id=call_id, as_of=as_of, timeout=timeout,
                                 locations=locations, roots=roots)
    if isinstance(spec, DocumentSourceSpec):
        return await acquire_documents(spec, topics, call_id=call_id, as_of=as_of,
                                       locations=locations, roots=roots)
    if isinstance(spec, WebPageSourceSpec):
        return await acquire_web_page(spec, topics, call_id=call_id, as_of=as_of,
                                      locations=locations, roots=roots, web_pages=web_pages)
    raise TypeError(f"unknown source spec {type(spec).__name__}")


async def acquire(
    spec: SourceSpec,
    topics: Sequence[TopicTerms],
    *,
    call_id: str,
    as_of: datetime,
    locations: Mapping[str, str],
    roots: PathRoots | None = None,
    turn: int = 0,
    timeout: float = DEFAULT_TIMEOUT_S,
    web_pages: WebPages | None = None,
) -> AcquisitionResult:
    """Acquire ``spec`` for ``topics``; never raises for a source that cannot be read.

    ``locations`` says what the placeholders in the spec's location stand for on this
    worker (``settings.Settings.locations``); ``roots`` are the folders it may read
    (``contracts.path_safety``; none given: Pressroom's own home and fixtures folder).
    ``PathRefused`` — a location outside them, special or of the wrong type — propagates
    like a bad job spec; what a folder holds that may not be read is a recorded warning.

    ``SourceSpecError`` (an unknown placeholder; ``UnpinnedSource``, a git source without a
    full commit id) does propagate: that is a bad job spec, not a retrieval outcome.

    ``web_pages`` reads a live web page (``url:`` and no ``path:``) from its stored
    revision, fetching it once (``web_revisions.WebPages``); without it a live page is a
    retrieval failure.
    """
    tool_name = TOOL_NAMES[spec.kind]
    arguments = tool_arguments(spec, topics)
    call = ToolCall(call_id=call_id, tool_name=tool_name, arguments=arguments, turn=turn)
    gathered: Gathered | None = None
    reason: str | None = None
    try:
        gathered = await _gather(spec, topics, call_id, as_of, timeout, locations,
                                 roots or PathRoots.default(locations), web_pages)
        outcome = AcquisitionOutcome.RETRIEVED
    # a tool's error text may quote a credential (a clone URL with its token): the reason
    # goes into the tool result, the stored records and the manifest, so it is redacted
    except RetrievalFailed as exc:
        outcome, reason = AcquisitionOutcome.RETRIEVAL_FAILED, redact_secrets(str(exc))
    except NothingToRetrieve as exc:
        outcome, reason = AcquisitionOutcome.NOT_RETRIEVED, redact_secrets(str(exc))
    records = gathered.records if gathered else []
    warnings = gathered.warnings if gathered else []
    covered = {t for r in records for t in r.topics}
    missing = [t.name for t in topics if t.name not in covered]
    if outcome is AcquisitionOutcome.RETRIEVED and warnings:
        reason = "; ".join(warnings)
    if outcome is AcquisitionOutcome.RETRIEVAL_FAILED:
        status = ToolStatus.ERROR
    else:
        status = ToolStatus.PARTIAL if warnings else ToolStatus.SUCCESS
    summary = {
        "source": spec.name,
        "outcome": outcome.value,
        "reason": reason,
        "revision": gathered.revision if gathered else None,
        "records": [
            {
                "item_id": r.item_id,
                "citation": r.citation(),
                "content_hash": r.content_hash,
                "topics": r.topics,
            }
            for r in records
        ],
        "missing_topics": missing,
        "warnings": warnings,
    }
    content = canonical_json(summary)
    result = ToolResult(
        call_id=call_id,
        tool_name=tool_name,
        status=status,
        content=content,
        result_hash=result_hash(content),
    )
    return AcquisitionResult(
        source_name=spec.name,
        kind=spec.kind,
        outcome=outcome,
        reason=reason,
        revision=gathered.revision if gathered else None,
        records=records,
        missing_topics=missing,
        warnings=warnings,
        argument_hash=canonical_argument_hash(tool_name, arguments),
        tool_call=call,
        tool_result=result,
    )
