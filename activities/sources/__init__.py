"""Source acquisition for research jobs: git at a pinned commit, documents, web pages (saved,
or live: fetched once under the operator's rules and stored as a revision — ``web_fetch``,
``web_revisions``, ``web_extract``).

``acquire(spec, topics, call_id=..., as_of=...)`` reads one source and returns an
``AcquisitionResult``: the outcome, bounded evidence records with full provenance, the
topics it found nothing for, and the recorded tool call and result. ``to_context_item``
turns a record into a candidate for the context engine. Errors: see
``activities.sources.errors``. The source specs themselves (what a job asks to acquire)
are contracts the workflow carries: ``contracts.source_specs``.
"""

from activities.sources.acquire import TOOL_NAMES, acquire, tool_arguments
from activities.sources.errors import NothingToRetrieve, RetrievalFailed
from activities.sources.evidence import AcquisitionResult, EvidenceRecord, to_context_item
from activities.sources.toolrecord import ToolCall, ToolResult

__all__ = [
    "TOOL_NAMES",
    "AcquisitionResult",
    "EvidenceRecord",
    "NothingToRetrieve",
    "RetrievalFailed",
    "ToolCall",
    "ToolResult",
    "acquire",
    "to_context_item",
    "tool_arguments",
]
