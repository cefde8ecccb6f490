"""The ``document`` source kind: a local document (md/txt) or a folder of them, inside the
operator's source roots.

The tools see the folder's regular, non-hidden documents (``FolderFiles``); what the
folder holds but may not be read — a link out of the roots, a FIFO, a file over the size
limit — is listed with the reason, never dropped silently. A document's evidence carries
the trust its spec declared (never more than external evidence: ``DOCUMENT_TRUSTS``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Sequence
from typing import Any

from activities.call_budget import CallBudget
from activities.sources.documents import (
    MAX_FILE_BYTES,
    MAX_FILES,
    TooManyDocuments,
    document_files,
)
from activities.sources.errors import RetrievalFailed
from activities.sources.kind import CitedRange, SourceAccess, decode_lines
from activities.tool_errors import ToolRejected
from context import SourceType, Trust
from contracts.errors import PathRefused
from contracts.path_safety import PathRoots, read_file
from contracts.source_specs import DocumentSourceSpec, expand_location

#: the source type a document's evidence gets, by the trust its spec declared
_DOCUMENT_TYPES = {
    Trust.EXTERNAL_EVIDENCE: SourceType.OFFICIAL_DOCUMENT,
    Trust.PROJECT_EDITABLE: SourceType.EDITABLE_PROJECT_FILE,
    Trust.UNTRUSTED_EXTERNAL_DATA: SourceType.WEB_PAGE,
}


class FolderFiles:
    """The documents of a folder (or one document) inside the source roots."""

    def __init__(self, spec: DocumentSourceSpec, location: str, roots: PathRoots) -> None:
        self.name = spec.name
        try:
            _single, listing = document_files(location, roots)
        except TooManyDocuments:
            raise RetrievalFailed(f"document folder of source {spec.name!r} holds more than "
                                  f"{MAX_FILES} documents; the limit is {MAX_FILES}") from None
        except RetrievalFailed:
            raise RetrievalFailed(f"document path of source {spec.name!r} does not "
                                  "exist") from None
        self._files = listing.files
        self._excluded = listing.excluded
        self._paths = sorted(self._files)

    def paths(self) -> list[str]:
        return self._paths

    def excluded(self) -> list[tuple[str, str]]:
        return self._excluded

    async def prefetch(self, paths: Sequence[str], budget: CallBudget) -> None:
        del paths, budget  # files are read as the search reaches them

    def load(self, path: str, budget: CallBudget) -> tuple[str, list[str]]:
        located = self._files[path]
        try:
            # the listing's size check is repeated by read_file; this one is the budget's
            size = os.lstat(located.real).st_size
        except OSError:
            size = 0  # read_file says what is wrong with it
        if not budget.fits(size):
            budget.skip(path, budget.over_budget())
            raise ToolRejected("arguments_over_limit", f"{self.name}:{path} is not read: "
                                                       f"{budget.over_budget()}")
        try:
            data = read_file(located, what=f"{self.name}:{path}",
                             max_bytes=min(MAX_FILE_BYTES, budget.max_bytes - budget.bytes_read))
        except PathRefused as exc:
            raise ToolRejected("not_found", f"{self.name}:{path} is not read: {exc}") from None
        except OSError as exc:
            raise ToolRejected("not_found", f"{self.name}:{path} cannot be read "
                                            f"({exc.strerror})") from None
        budget.spend(len(data))
        return "sha256:" + hashlib.sha256(data).hexdigest(), decode_lines(self.name, path, data)


class DocumentKind:
    """``kind: document``."""

    name = "document"
    spec_model = DocumentSourceSpec
    limit_type = SourceType.OFFICIAL_DOCUMENT

    async def open(self, spec: DocumentSourceSpec, access: SourceAccess) -> FolderFiles:
        # a folder is listed (a stat per entry) in a worker thread: blocking file-system
        # work stays off the event loop
        return await asyncio.to_thread(FolderFiles, spec,
                                       expand_location(spec.path, access.locations),
                                       access.roots)

    def evidence(self, spec: DocumentSourceSpec, cited: CitedRange) -> dict[str, Any]:
        return {"source_type": _DOCUMENT_TYPES[spec.trust],
                "locator": f"{spec.name}:{cited.path}#L{cited.start}-L{cited.end}",
                "trust": spec.trust, "authority": 1}
