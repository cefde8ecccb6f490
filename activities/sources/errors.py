"""Errors of reading a source, in one hierarchy.

``SourceError`` is the root; it and ``SourceSpecError`` live in ``contracts.errors``
because a bad source spec is a bad job spec (the workflow's retry policy names it). The
subclasses:

- ``SourceSpecError`` (``contracts.errors``) — a source spec cannot even be interpreted
  (an unknown ``${PLACEHOLDER}`` in a location, a trust label a spec may not claim, a kind
  with no registered reader: ``UnknownSourceKind``). Raised to the caller: it is a bad job
  spec, found before any tool runs.
- ``RetrievalFailed`` — the source could not be read (unreachable repository, missing
  commit, missing path, unreadable file, a folder over its file limit, timeout). A
  research tool never lets it escape (``research_tools.source_files.open_source``): it
  becomes a ``source_unavailable`` refusal the model sees, with the message as its detail.
"""

from __future__ import annotations

from contracts.errors import SourceError


class RetrievalFailed(SourceError):
    """A source could not be read; ``str(exc)`` says why, naming no file content."""
