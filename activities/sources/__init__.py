"""The kinds of source a job may declare, and how each is read at its revision.

One module per kind, behind one interface (``kind.SourceKind``), registered once in
``registry`` (docs/architecture.md#source-kinds-and-research-tools): ``git`` (a
repository at its pinned commit, through ``gitrepo``), ``document`` (a document folder
inside the roots, through ``documents``) and ``web_page`` (a saved page, or a live page
fetched once under the operator's rules and stored as a revision — ``web_fetch``,
``web_revisions``, ``web_extract``, ``webpages``). The research tools open a source
through the registry; ``EvidenceRecord`` is what a note's citation of one becomes, and
``to_context_item`` turns a record into a candidate for the context engine. Errors: see
``activities.sources.errors``. The source specs themselves (what a job declares) are
contracts the workflow carries: ``contracts.source_specs``.
"""

from activities.sources.errors import RetrievalFailed
from activities.sources.evidence import EvidenceRecord, to_context_item

__all__ = ["EvidenceRecord", "RetrievalFailed", "to_context_item"]
