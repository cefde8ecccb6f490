"""Evidence from local documents (Markdown or plain text), a file or a folder of them.

Files are read as strict UTF-8: a file that is not valid UTF-8 is never decoded with
replacement characters (that would change what the source says); it is recorded as a
warning when other files of the folder could be read (tool status ``partial``) and as
``retrieval_failed`` when none could. Matching sections (Markdown headings; a plain text
file's blank-line separated blocks) become excerpts with line ranges.

Trust is ``external_evidence`` (official documentation) unless the spec lowers it, e.g.
``project_editable`` for a ``plan.md`` — which also makes it an editable project file, so
the engine renders it as data whatever it says.

Paths are read only inside the worker's source roots (``contracts.path_safety``): a
``path`` outside them, on ``/proc``, ``/sys`` or ``/dev``, or not a regular file or folder is
refused (``PathRefused``, which fails the step: it is a bad job spec). Inside a folder, a
symbolic link out of the roots or to a folder, a FIFO, socket or device, and a file over
``MAX_FILE_BYTES`` are not read and recorded as warnings with their reason (tool status
``partial``); a file's size is checked before a byte of it is read.

Record identity: ``item_id = <name>:<relpath>#L<a>-L<b>``; ``revision`` and
``source_digest`` are the sha256 of the file's bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime

from activities.sources.errors import NothingToRetrieve, RetrievalFailed
from activities.sources.evidence import EvidenceRecord, Gathered, excerpt_item_id
from activities.sources.excerpts import Section, excerpt_text, markdown_sections, section_windows
from activities.sources.toolrecord import result_hash
from context.vocabulary import SourceType, Trust
from contracts.errors import PathRefused
from contracts.path_safety import (
    FolderListing,
    PathRoots,
    existing_type,
    list_folder,
    locate,
    read_file,
)
from contracts.source_specs import DocumentSourceSpec, TopicTerms, expand_location

TOOL_NAME = "read_document"
SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 2_000_000
MAX_FILES = 500

_SOURCE_TYPE = {
    Trust.EXTERNAL_EVIDENCE: SourceType.OFFICIAL_DOCUMENT,
    Trust.PROJECT_EDITABLE: SourceType.EDITABLE_PROJECT_FILE,
    Trust.UNTRUSTED_EXTERNAL_DATA: SourceType.WEB_PAGE,
}
_AUTHORITY = {Trust.EXTERNAL_EVIDENCE: 2, Trust.PROJECT_EDITABLE: 1}


def text_blocks(lines: Sequence[str]) -> list[Section]:
    """Blank-line separated blocks of a plain text file."""
    blocks: list[Section] = []
    start: int | None = None
    for i, line in enumerate([*lines, ""], start=1):
        if line.strip() and start is None:
            start = i
        elif not line.strip() and start is not None:
            blocks.append(Section(len(blocks), lines[start - 1].strip()[:80], start, i - 1))
            start = None
    return blocks


def document_files(path: str, roots: PathRoots) -> tuple[bool, FolderListing]:
    """Whether ``path`` (expanded) is a single document, and its readable files with the
    exclusions (a single file is listed under its own name). ``RetrievalFailed`` when it
    does not exist; ``PathRefused`` when it may not be read at all."""
    located = locate(path, roots, "source", what="document path")
    kind = existing_type(located.real)
    if kind == "missing":
        raise RetrievalFailed(f"document path {path} does not exist")
    if kind == "file":
        return True, FolderListing(files={located.real.name: located})
    if kind != "folder":
        raise PathRefused(f"document path {path} is a {kind}, not a file or folder; not read")
    return False, list_folder(located, roots, suffixes=SUFFIXES, max_bytes=MAX_FILE_BYTES,
                              max_files=MAX_FILES)


def _files(path: str, roots: PathRoots) -> tuple[bool, FolderListing]:
    single, listing = document_files(path, roots)
    if not listing.files and not listing.excluded:
        raise NothingToRetrieve(f"no {'/'.join(SUFFIXES)} documents under {path}")
    if listing.over_limit or len(listing.files) > MAX_FILES:
        raise RetrievalFailed(f"more than {MAX_FILES} documents under {path}; the limit is "
                              f"{MAX_FILES}")
    return single, listing


async def acquire_documents(
    spec: DocumentSourceSpec,
    topics: Sequence[TopicTerms],
    *,
    call_id: str,
    as_of: datetime,
    locations: Mapping[str, str],
    roots: PathRoots | None = None,
) -> Gathered:
    """Matching sections of every document under ``spec.path`` (inside ``roots``: the
    worker's source roots; none given, Pressroom's own folders from ``locations``)."""
    roots = roots or PathRoots.default(locations)
    single, listing = _files(expand_location(spec.path, locations), roots)
    warnings = [f"{rel}: {reason}" for rel, reason in listing.excluded]
    records: list[EvidenceRecord] = []
    folder_digest = hashlib.sha256()
    file_digests: dict[str, str] = {}
    for rel, located in listing.files.items():
        try:
            data = read_file(located, what="document", max_bytes=MAX_FILE_BYTES)
        except PathRefused as exc:
            warnings.append(f"{rel}: refused ({exc}); skipped")
            continue
        except OSError as exc:
            warnings.append(f"{rel}: cannot be read ({exc.strerror}); skipped")
            continue
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            warnings.append(f"{rel}: not valid UTF-8 (byte {exc.start}); skipped")
            continue
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        file_digests[rel] = digest
        folder_digest.update(f"{rel}\0{digest}\n".encode())
        sections = (
            text_blocks(lines) if rel.lower().endswith(".txt") else markdown_sections(lines)
        )
        for section in sections:
            for w in section_windows(lines, section, topics):
                content = excerpt_text(lines, w)
                records.append(
                    EvidenceRecord(
                        item_id=excerpt_item_id(spec.name, rel, w.start, w.end),
                        call_id=call_id,
                        tool_name=TOOL_NAME,
                        source_name=spec.name,
                        source_type=_SOURCE_TYPE[spec.trust],
                        path=rel,
                        line_start=w.start,
                        line_end=w.end,
                        locator=f"{spec.name}:{rel}#L{w.start}-L{w.end}",
                        content=content,
                        content_hash=result_hash(content),
                        revision=digest,
                        source_digest=digest,
                        observed_at=as_of,
                        trust=spec.trust,
                        security_class=spec.security_class,
                        topics=list(w.topics),
                        canonical_key=f"document:{spec.name}:{rel}#L{w.start}-L{w.end}",
                        authority=_AUTHORITY.get(spec.trust, 0),
                    )
                )
    if not file_digests:
        raise RetrievalFailed("no document could be read: " + "; ".join(warnings))
    # A single file's revision is its own digest; a folder's digests every file it read.
    revision = (
        next(iter(file_digests.values())) if single
        else "sha256:" + folder_digest.hexdigest()
    )
    return Gathered(revision=revision, records=records, warnings=warnings)
