"""Evidence from a saved web page: visible text, relevant sections, content hash.

Web text is ``untrusted_external_data`` whatever it says
(docs/context-engine.md#effective-trust-and-role-limits): a page that tells the agent to skip
approval is evidence *that the page says so*, nothing more. The page is reduced at the source
(docs/context-engine.md#source-limits): tags are stripped with the standard library's
``html.parser`` (script, style and similar non-text elements dropped; text hidden by CSS is
kept — hiding text makes it neither trustworthy nor harmless, and the engine's security gate
must see it), headings become section boundaries, and only sections that mention a topic are
kept, each with its line range in the extracted text and the page's content hash as its
revision.

The page is read only inside the worker's source roots (``contracts.path_safety``): outside
them, on ``/proc``, ``/sys`` or ``/dev``, not a regular file (a FIFO, socket or device) or
over ``MAX_PAGE_BYTES`` (checked before a byte is read), it is refused with
``PathRefused``, a bad job spec that fails the step.

Record identity: ``item_id = <name>:page#L<a>-L<b>`` (lines of the extracted text);
``revision`` and ``source_digest`` are the sha256 of the saved file's bytes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

from activities.sources.errors import NothingToRetrieve, RetrievalFailed
from activities.sources.evidence import EvidenceRecord, Gathered, excerpt_item_id
from activities.sources.excerpts import excerpt_text, markdown_sections, section_windows
from activities.sources.toolrecord import result_hash
from context.vocabulary import SourceType, Trust
from contracts.path_safety import PathRoots, locate, read_file
from contracts.source_specs import TopicTerms, WebPageSourceSpec, expand_location

TOOL_NAME = "read_web_page"
MAX_PAGE_BYTES = 5_000_000
_SKIP = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "li",
    "ul", "ol", "pre", "blockquote", "br", "hr", "tr", "table", "dt", "dd", "figure",
    "figcaption", "title", "body",
}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


class _TextExtractor(HTMLParser):
    """Visible text as lines; headings are rendered ``## heading`` to mark sections."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._buf: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._pre = 0

    def _flush(self) -> None:
        text = "".join(self._buf)
        self._buf = []
        for raw in text.split("\n") if self._pre else [text]:
            line = raw.rstrip() if self._pre else re.sub(r"\s+", " ", raw).strip()
            if line:
                self.lines.append(line)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._flush()
            self._in_title = True
            self._buf.append("# ")
            return
        if tag in _SKIP:
            self._skip_depth += 1
            return
        if tag in _HEADINGS or tag in _BLOCK:
            self._flush()
        if tag in _HEADINGS:
            self._buf.append("#" * _HEADINGS[tag] + " ")
        if tag == "pre":
            self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._flush()
            self._in_title = False
            return
        if tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if tag in _HEADINGS or tag in _BLOCK:
            self._flush()
        if tag == "pre":
            self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skip_depth == 0 or self._in_title:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_lines(html: str) -> list[str]:
    """The visible text of ``html``, one block per line, headings as ``#`` lines."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return [line for line in parser.lines if line.strip("# ")]


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


async def acquire_web_page(
    spec: WebPageSourceSpec,
    topics: Sequence[TopicTerms],
    *,
    call_id: str,
    as_of: datetime,
    locations: Mapping[str, str],
    roots: PathRoots | None = None,
) -> Gathered:
    """Relevant sections of a saved page, labelled untrusted external data (read inside
    ``roots``; none given, Pressroom's own folders from ``locations``)."""
    data, path = read_page(expand_location(spec.path, locations),
                           roots or PathRoots.default(locations))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RetrievalFailed(
            f"saved web page {path.name} is not valid UTF-8 (byte {exc.start})"
        ) from exc
    lines = html_to_lines(text) if looks_like_html(path, text) else text.splitlines()
    if not any(line.strip() for line in lines):
        raise NothingToRetrieve(f"saved web page {path.name} has no visible text")
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
                    path=path.name,
                    line_start=w.start,
                    line_end=w.end,
                    url=spec.url,
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
