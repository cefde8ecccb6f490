"""Evidence from a saved web page: visible text, relevant sections, content hash.

Web text is ``untrusted_external_data`` whatever it says
(docs/context-engine.md#effective-trust-and-role-limits): a page that tells the agent to skip
approval is evidence *that the page says so*, nothing more. The page is reduced at the source
(docs/context-engine.md#source-limits): its main text is extracted with ``trafilatura``
(``web_extract``; navigation, footers and scripts dropped) and any text the page hides is
appended — hiding text makes it neither trustworthy nor harmless, and the engine's security
gate must see it —, headings become section boundaries, and only sections that mention a
topic are kept, each with its line range in the extracted text and the page's content hash
as its revision.

A live page (``url:`` and no ``path:``) is read from its stored revision
(``web_revisions.WebPages``): fetched once under the operator's rules, then the same bytes
for every read of the job.

The page is read only inside the worker's source roots (``contracts.path_safety``): outside
them, on ``/proc``, ``/sys`` or ``/dev``, not a regular file (a FIFO, socket or device) or
over ``MAX_PAGE_BYTES`` (checked before a byte is read), it is refused with
``PathRefused``, a bad job spec that fails the step.

Record identity: ``item_id = <name>:page#L<a>-L<b>`` (lines of the extracted text);
``revision`` and ``source_digest`` are the sha256 of the saved file's (or the stored
revision's) bytes.
"""

from __future__ import annotations

import asyncio
import codecs
import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from activities.sources.errors import NothingToRetrieve, RetrievalFailed
from activities.sources.evidence import EvidenceRecord, Gathered, excerpt_item_id
from activities.sources.excerpts import excerpt_text, markdown_sections, section_windows
from activities.sources.toolrecord import result_hash
from activities.sources.web_extract import html_to_lines
from context.vocabulary import SourceType, Trust
from contracts.errors import WebFetchRefused
from contracts.path_safety import PathRoots, locate, read_file
from contracts.source_specs import TopicTerms, WebPageSourceSpec, expand_location

if TYPE_CHECKING:
    from activities.sources.web_revisions import PageRevision, WebPages

TOOL_NAME = "read_web_page"
MAX_PAGE_BYTES = 5_000_000


def read_page(location: str, roots: PathRoots) -> tuple[bytes, Path]:
    """The saved page's bytes and its path as named; ``RetrievalFailed`` when it does not
    exist, ``PathRefused`` when it may not be read."""
    located = locate(location, roots, "source", what="saved web page")
    try:
        return read_file(located, what="saved web page", max_bytes=MAX_PAGE_BYTES), \
            Path(location)
    except FileNotFoundError:
        raise RetrievalFailed(f"saved web page {location} does not exist") from None
    except OSError as exc:
        raise RetrievalFailed(f"saved web page {location} cannot be read "
                              f"({exc.strerror})") from None


def looks_like_html(path: Path, text: str) -> bool:
    return path.suffix.lower() in (".html", ".htm", ".xhtml") or text.lstrip().startswith("<")


def live_page_name(revision: PageRevision) -> str:
    """The one file name a live page is listed under: the last segment of its final URL's
    path when it is a plain name, else ``index.html`` (``index.txt`` for plain text)."""
    last = PurePosixPath(urlsplit(revision.final_url).path).name
    if last and len(last) <= 100 and all(c.isalnum() or c in "._-" for c in last) \
            and not last.startswith("."):
        return last
    return "index.txt" if revision.media_type == "text/plain" else "index.html"


def page_lines(name: str, data: bytes, *, html: bool | None = None,
               what: str = "web page", charset: str | None = None) -> list[str]:
    """The text lines of a page's bytes (``html``: whether it is HTML; ``None``: guessed
    from the name and the text), decoded as ``charset`` (a live page's ``Content-Type``
    says it; default UTF-8); ``RetrievalFailed`` if they do not decode."""
    encoding = "utf-8"
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            raise RetrievalFailed(f"{what} {name} declares an unknown charset "
                                  f"{charset[:40]!r}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise RetrievalFailed(f"{what} {name} is not valid {encoding.upper()} "
                              f"(byte {exc.start})") from exc
    is_html = looks_like_html(Path(name), text) if html is None else html
    return html_to_lines(text) if is_html else text.splitlines()


def revision_charset(revision: PageRevision) -> str | None:
    """The ``charset`` a stored live page's ``Content-Type`` names, if any."""
    for param in revision.headers.get("content-type", "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"'):
            return value.strip().strip('"')
    return None


def revision_is_html(revision: PageRevision) -> bool | None:
    """Whether a stored live page is HTML by its content type (``None``: no type said)."""
    media = revision.media_type
    if not media:
        return None
    return media in ("text/html", "application/xhtml+xml")


async def acquire_web_page(
    spec: WebPageSourceSpec,
    topics: Sequence[TopicTerms],
    *,
    call_id: str,
    as_of: datetime,
    locations: Mapping[str, str],
    roots: PathRoots | None = None,
    web_pages: WebPages | None = None,
) -> Gathered:
    """Relevant sections of a page, labelled untrusted external data: a saved page read
    inside ``roots`` (none given, Pressroom's own folders from ``locations``), a live one
    from its stored revision (``web_pages``; none given, a live page cannot be read)."""
    url = spec.url
    if spec.path is None:
        if web_pages is None:
            raise RetrievalFailed(f"live web page {spec.url[:200]} cannot be fetched here "
                                  "(no web fetcher on this path)")
        try:
            revision = await web_pages.current(spec)
        except WebFetchRefused as exc:
            raise RetrievalFailed(exc.message) from None
        data, name, url = revision.body, live_page_name(revision), revision.final_url
        lines = await asyncio.to_thread(page_lines, name, data, html=revision_is_html(revision),
                                        charset=revision_charset(revision))
    else:
        data, path = read_page(expand_location(spec.path, locations),
                               roots or PathRoots.default(locations))
        name = path.name
        lines = await asyncio.to_thread(page_lines, name, data, what="saved web page")
    if not any(line.strip() for line in lines):
        raise NothingToRetrieve(f"{'web' if spec.path is None else 'saved web'} page {name} "
                                "has no visible text")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    records: list[EvidenceRecord] = []
    for section in markdown_sections(lines):
        for w in section_windows(lines, section, topics):
            content = excerpt_text(lines, w)
            records.append(
                EvidenceRecord(
                    item_id=excerpt_item_id(spec.name, "page", w.start, w.end),
                    call_id=call_id,
                    tool_name=TOOL_NAME,
                    source_name=spec.name,
                    source_type=SourceType.WEB_PAGE,
                    path=name,
                    line_start=w.start,
                    line_end=w.end,
                    url=url,
                    locator=f"L{w.start}-L{w.end}",
                    content=content,
                    content_hash=result_hash(content),
                    revision=digest,
                    source_digest=digest,
                    observed_at=as_of,
                    trust=Trust.UNTRUSTED_EXTERNAL_DATA,
                    security_class=spec.security_class,
                    topics=list(w.topics),
                    canonical_key=f"web_page:{spec.url}#L{w.start}-L{w.end}",
                    authority=0,
                )
            )
    return Gathered(revision=digest, records=records)
