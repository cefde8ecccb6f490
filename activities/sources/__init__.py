"""Source acquisition for research jobs: git at a pinned commit, documents, saved web pages.

``acquire(spec, topics, call_id=..., as_of=...)`` reads one source and returns an
``AcquisitionResult``: the outcome, bounded evidence records with full provenance, the
topics it found nothing for, and the recorded tool call and result. ``to_context_item``
turns a record into a candidate for the context engine. Errors: see
``activities.sources.errors``.
"""

from activities.sources.acquire import TOOL_NAMES, acquire, tool_arguments
from activities.sources.errors import (
    NothingToRetrieve,
    RetrievalFailed,
    SourceError,
    SourceSpecError,
)
from activities.sources.records import AcquisitionResult, EvidenceRecord, to_context_item
from activities.sources.specs import (
    DocumentSourceSpec,
    GitSourceSpec,
    SourceSpec,
    TopicTerms,
    WebPageSourceSpec,
    expand_location,
)
from activities.sources.toolrecord import ToolCall, ToolResult

__all__ = [
    "TOOL_NAMES",
    "AcquisitionResult",
    "DocumentSourceSpec",
    "EvidenceRecord",
    "GitSourceSpec",
    "NothingToRetrieve",
    "RetrievalFailed",
    "SourceError",
    "SourceSpec",
    "SourceSpecError",
    "ToolCall",
    "ToolResult",
    "TopicTerms",
    "WebPageSourceSpec",
    "acquire",
    "expand_location",
    "to_context_item",
    "tool_arguments",
]
