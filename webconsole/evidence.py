"""Citations in a draft, resolved to the exact excerpt the model was shown.

A draft cites evidence as inline code: ``base#L<a>-L<b>`` (``repo@commit:path``, a
document's ``name:path`` or a page's URL). The excerpts are the data blocks of the
*sealed, hash-verified* request the draft was written from (the draft step's manifest), so a
citation resolves only to text the model really saw — not to whatever the source says
today. A citation resolves when a block's citation has the same base and a line range that
contains the cited one; the excerpt shown is narrowed to the cited lines when the block's
content still has one line per source line, else the whole block.

Pure: no I/O; ``webconsole.backend`` hands in the parsed blocks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from context import LINE_RANGE, ContextError, DataBlockView, block_citation, parse_data_blocks

_RANGE = LINE_RANGE
#: a git source's base: ``name@commit:path``
_GIT_BASE = re.compile(r"^(?P<name>[^@:/\s]+)@(?P<rev>[0-9A-Za-z]{7,64}):(?P<path>.+)$")
#: a document source's base: ``name:path`` (a URL is neither)
_DOC_BASE = re.compile(r"^(?P<name>[^@:/\s]+):(?!//)(?P<path>.+)$")


@dataclass(frozen=True)
class Base:
    """A citation's base in its parts: the declared source's name, the file's path in
    it, and the commit a git base pins (``None`` for a document or page)."""

    name: str
    path: str
    commit: str | None


def split_base(base: str) -> Base:
    """``httpkit@3f2a…:README.md`` → (httpkit, README.md, 3f2a…); ``handbook:guide.md`` →
    (handbook, guide.md, None); a page's URL → (its host, its path, None)."""
    git = _GIT_BASE.match(base)
    if git is not None:
        return Base(git.group("name"), git.group("path"), git.group("rev"))
    doc = _DOC_BASE.match(base)
    if doc is not None:
        return Base(doc.group("name"), doc.group("path"), None)
    url = urlsplit(base)
    return Base(url.hostname or base, url.path.lstrip("/") or "/", None)


def short_label(citation: str) -> str:
    """A citation as a reviewer reads it: ``httpkit README.md L4`` or ``handbook guide.md
    L11-12`` — the commit left to the tooltip. Not a citation with a range: unchanged."""
    m = _RANGE.match(citation.strip())
    if m is None:
        return citation
    parts = split_base(m.group("base"))
    a, b = m.group("a"), m.group("b")
    return f"{parts.name} {parts.path} L{a}" + ("" if a == b else f"-{b}")


@dataclass(frozen=True)
class Excerpt:
    """What a citation points at: the block, and the cited lines of its content."""

    citation: str
    item_id: str
    source: str
    revision: str | None
    trust: str
    content_hash: str
    line_start: int | None
    line_end: int | None
    lines: tuple[str, ...]
    flags: tuple[str, ...]

    @property
    def anchor(self) -> str:
        """A stable, URL-safe id for the excerpt's place on the page: its short label and
        a digest of the whole citation (two commits of one file never share one)."""
        digest = hashlib.sha256(self.citation.encode("utf-8")).hexdigest()[:10]
        return ("ex-" + re.sub(r"[^A-Za-z0-9]+", "-", self.label).strip("-")[:60]
                + "-" + digest)

    @property
    def label(self) -> str:
        """``httpkit README.md L4`` (``short_label``)."""
        return short_label(self.citation)

    @property
    def parts(self) -> Base:
        return split_base(self.source)

    @property
    def pinned(self) -> str:
        """Where the excerpt is from, once: ``source@revision:path`` (the revision the
        block names — a commit, or a document's content hash)."""
        parts = self.parts
        revision = self.revision or parts.commit
        return f"{parts.name}@{revision}:{parts.path}" if revision else self.source

    @property
    def pinned_short(self) -> str:
        """``pinned`` with the revision cut to 12 hex digits (the whole one in a tooltip)."""
        parts = self.parts
        revision = self.revision or parts.commit
        if not revision:
            return self.source
        algorithm, _, digest = revision.rpartition(":")
        short = (f"{algorithm}:" if algorithm else "") + (
            digest[:12] + "…" if len(digest) > 12 else digest)
        return f"{parts.name}@{short}:{parts.path}"


def _narrow(block: DataBlockView, base: str, cited_range: tuple[int, int] | None,
            cited: str) -> Excerpt:
    full = _RANGE.match(block_citation(block))
    lines = block.content.splitlines()
    start = end = None
    if full is not None and cited_range is not None:
        a, b = int(full.group("a")), int(full.group("b"))
        start, end = cited_range
        if b - a + 1 == len(lines):  # one content line per source line: show only the cited
            lines = lines[start - a:end - a + 1]
    return Excerpt(citation=cited, item_id=block.item_id, source=base,
                   revision=block.revision, trust=block.trust,
                   content_hash=block.content_hash, line_start=start, line_end=end,
                   lines=tuple(lines), flags=tuple(block.flags))


def resolve(citation: str, blocks: list[DataBlockView]) -> Excerpt | None:
    """The excerpt ``citation`` names among ``blocks``, or ``None`` when it does not
    resolve (no block with that base covers the cited lines)."""
    cited = _RANGE.match(citation.strip())
    for block in blocks:
        whole = block_citation(block)
        if cited is None:
            if whole == citation.strip() or block.citation == citation.strip():
                return _narrow(block, block.citation, None, citation)
            continue
        m = _RANGE.match(whole)
        if m is None or m.group("base") != cited.group("base"):
            continue
        a, b = int(m.group("a")), int(m.group("b"))
        first, last = int(cited.group("a")), int(cited.group("b"))
        if a <= first <= last <= b:
            return _narrow(block, cited.group("base"), (first, last), citation)
    return None


def _texts(content: Any) -> list[str]:
    """Every text of a message's content, whatever the provider's shape (a string, a list
    of parts with ``text``, a tool result whose ``content`` is either)."""
    if isinstance(content, str):
        return [content]
    found: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    found.append(part["text"])
                found += _texts(part.get("content"))
    return found


def request_blocks(payload: dict[str, Any]) -> list[DataBlockView]:
    """The data blocks of a serialized request (every message of either adapter), each
    verified against its own hash by ``parse_data_blocks``; a message that does not parse
    contributes nothing (the page says the request could not be read)."""
    blocks: list[DataBlockView] = []
    messages = payload.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") == "system":
            continue
        for text in _texts(message.get("content")):
            try:
                blocks += parse_data_blocks(text)
            except ContextError:
                continue
    return blocks


_PART_HEADER = re.compile(r"^## [A-Z_]+ (?P<id>\S+)\n")


def item_texts(payload: dict[str, Any]) -> dict[str, str]:
    """What each item of a serialized request said, by item id: each data block's
    (hash-verified) content, each ``## TASK|STATE … <item id>`` part's text, and — as
    ``"system"`` — the system message (the control policy)."""
    texts: dict[str, str] = {}
    messages = payload.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        for text in _texts(message.get("content")):
            if message.get("role") == "system":
                texts.setdefault("system", text)
                continue
            header = _PART_HEADER.match(text)
            if header is not None:
                texts.setdefault(header.group("id"), text[header.end():])
    for block in request_blocks(payload):
        texts.setdefault(block.item_id, block.content)
    return texts


def looks_like_citation(text: str) -> bool:
    """Whether an inline code span is meant as a citation (``…#La-Lb`` or a URL/path
    with a source separator)."""
    return _RANGE.match(text.strip()) is not None


__all__ = ["Base", "Excerpt", "item_texts", "looks_like_citation", "request_blocks", "resolve",
           "short_label", "split_base"]
