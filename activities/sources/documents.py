"""Local documents (Markdown or plain text), a file or a folder of them, for the
``document`` source kind (``activities.sources.document``).

Paths are read only inside the worker's source roots (``contracts.path_safety``): a
``path`` outside them, on ``/proc``, ``/sys`` or ``/dev``, or not a regular file or folder is
refused (``PathRefused``, which fails the step: it is a bad job spec). Inside a folder, a
symbolic link out of the roots or to a folder, a FIFO, socket or device, and a file over
``MAX_FILE_BYTES`` are not read and listed as exclusions with their reason; a file's size
is checked before a byte of it is read, and a folder of more than ``MAX_FILES`` documents
is refused whole (``TooManyDocuments``), never cut short in silence.
"""

from __future__ import annotations

from activities.sources.errors import RetrievalFailed
from context import SourceType, Trust
from contracts.errors import PathRefused
from contracts.path_safety import (
    FolderListing,
    PathRoots,
    existing_type,
    list_folder,
    locate,
)

SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 2_000_000
MAX_FILES = 500

_SOURCE_TYPE = {
    Trust.EXTERNAL_EVIDENCE: SourceType.OFFICIAL_DOCUMENT,
    Trust.PROJECT_EDITABLE: SourceType.EDITABLE_PROJECT_FILE,
    Trust.UNTRUSTED_EXTERNAL_DATA: SourceType.WEB_PAGE,
}
_AUTHORITY = {Trust.EXTERNAL_EVIDENCE: 2, Trust.PROJECT_EDITABLE: 1}


class TooManyDocuments(RetrievalFailed):
    """A document folder holds more than ``MAX_FILES`` documents."""


def document_files(path: str, roots: PathRoots) -> tuple[bool, FolderListing]:
    """Whether ``path`` (expanded) is a single document, and its readable files with the
    exclusions (a single file is listed under its own name). ``RetrievalFailed`` when it
    does not exist or holds more than ``MAX_FILES`` documents; ``PathRefused`` when it may
    not be read at all."""
    located = locate(path, roots, "source", what="document path")
    kind = existing_type(located.real)
    if kind == "missing":
        raise RetrievalFailed(f"document path {path} does not exist")
    if kind == "file":
        return True, FolderListing(files={located.real.name: located})
    if kind != "folder":
        raise PathRefused(f"document path {path} is a {kind}, not a file or folder; not read")
    listing = list_folder(located, roots, suffixes=SUFFIXES, max_bytes=MAX_FILE_BYTES,
                          max_files=MAX_FILES)
    if listing.over_limit or len(listing.files) > MAX_FILES:
        # refused whole, never cut to the first MAX_FILES in silence
        raise TooManyDocuments(f"more than {MAX_FILES} documents under {path}; the limit is "
                              f"{MAX_FILES}")
    return False, listing


