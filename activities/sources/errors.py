"""Errors of source acquisition, in one hierarchy.

``SourceError`` is the root; it and ``SourceSpecError`` live in ``contracts.errors``
because a bad source spec is a bad job spec (the workflow's retry policy names it). The
subclasses:

- ``SourceSpecError`` (``contracts.errors``) — a source spec cannot even be interpreted
  (an unknown ``${PLACEHOLDER}`` in a location, a trust label a spec may not claim). Raised
  to the caller: it is a bad job spec, found before any tool runs.
- ``RetrievalFailed`` — the tool ran and could not get the source (unreachable repository,
  missing commit, missing path, unreadable or non-UTF-8 file, timeout). ``acquire`` never lets
  it escape: it becomes an ``AcquisitionResult`` with outcome ``retrieval_failed`` and the
  message as its reason, and a tool result with status ``error``.
- ``NothingToRetrieve`` — the source was reached but holds nothing the tool can read (an
  empty document folder, a web page with no text). Also caught by ``acquire``: outcome
  ``not_retrieved``.
"""

from __future__ import annotations

from contracts.errors import SourceError


class RetrievalFailed(SourceError):
    """The acquisition tool could not read the source; ``str(exc)`` is the recorded reason."""


class NothingToRetrieve(SourceError):
    """The source was reachable but held nothing readable; the reason is recorded."""
