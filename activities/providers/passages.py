"""Whole sentences and whole statements of an evidence excerpt: what the draft quotes.

Sources wrap. A Markdown paragraph, a text file, a comment block or a docstring breaks a
sentence over several lines, and a call or signature spreads over several lines of code;
a quote of one line then ended mid-sentence ("…ask for a specific wait (for example the")
and the reviewer had to open the source to read the claim. ``passages`` turns an excerpt's
lines into quotable passages that follow sentence and statement boundaries, each with the
0-based span of lines it covers, so the draft cites ``#La-Lb`` over exactly those lines
(docs/architecture.md#what-the-draft-quotes).

A passage's text is its lines' text joined with single spaces — each line stripped, and a
list, quote or comment marker (``- ``, ``> ``, ``# ``) and docstring quotes trimmed —
so it is verbatim up to line wrapping: ``quote_matches`` checks exactly that against the
cited lines. How lines join depends on what the excerpt holds (``layout``):

* ``prose`` (a Markdown, reStructuredText or text document, a web page's text): lines join
  into paragraphs — broken by a blank line, a heading, a code fence, a table row and the
  start of a list item — and a paragraph splits into sentences;
* ``code`` (a source file): a run of ``#`` comment lines, or of lines inside a
  docstring, is prose as above; any other line whose brackets open more than they close
  joins the lines that close them (a statement), up to ``MAX_STATEMENT_LINES``;
* ``lines`` (logs, data and configuration files, anything else): each line alone, as
  before — joining log records would invent a sentence no one wrote.

A sentence longer than a quote may be (``limit``) is split at its clauses (``; ``) and,
failing that, falls back to its lines one by one: a cut quote is worse than a whole one,
but evidence dropped is worse still. Pure: the same lines give the same passages.

What it cost: one more pass over each evidence line per draft (split once, not once per
topic); measured in ``bench/`` with the provider's other work (bench/RESULTS.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

__all__ = ["MAX_STATEMENT_LINES", "Layout", "Passage", "layout", "passages", "quote_matches",
           "sentences"]

Layout = Literal["prose", "code", "lines"]
MAX_STATEMENT_LINES = 6
_ENDINGS = (".", "!", "?", ":")
#: a line shorter than this that ends unpunctuated before a capitalized line is a title
_TITLE_CHARS = 50

_PROSE_SUFFIXES = frozenset({"", ".md", ".markdown", ".mdx", ".rst", ".txt", ".text", ".adoc",
                             ".html", ".htm"})
_CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt",
    ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".swift", ".scala", ".php", ".sh"})
#: where a sentence ends: after ``.``, ``!`` or ``?`` (and any closing quote or bracket),
#: before whitespace and something that starts a sentence — so "e.g. the", "0.2.0" and
#: "`x.y`" do not end one
_CLOSERS = "\"')]*_`\u201d\u2019"
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]\u201d\u2019]*\s+(?=[A-Z0-9\"'`(\[*_\u201c\u2018])")
_CLAUSE_END = re.compile(r"(?<=;)\s+")
_LIST_ITEM = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+)")
_QUOTE_MARK = re.compile(r"^>\s?")
_FENCE = re.compile(r"^(?:```|~~~)")
#: a setting in a text file — a name, then ``=`` or ``:`` and a value (``MAX_RETRIES = 5``,
#: ``max_delay: 30``) — is a line of its own, never part of a sentence; "Note: this …"
#: is prose (a capitalized word without ``_`` before a colon)
_SETTING = re.compile(r"^[A-Za-z_][\w.\-]*\s*=\s*\S|^(?:[a-z][\w.\-]*|\w*_\w*):\s+\S")
_DOC_DELIMITERS = ('"""', "'''")
_DOC_OPEN = re.compile(r"^[rRuUbB]?(\"\"\"|''')")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")


@dataclass(frozen=True)
class Passage:
    """One quotable passage: lines ``start``..``end`` (0-based, inclusive) of the excerpt,
    and their text joined as the module docstring says."""

    start: int
    end: int
    text: str
    #: False when the excerpt cuts the passage: a sentence continuing from before the
    #: excerpt's first line or past its last, or a line of a sentence too long to quote
    whole: bool = True


def layout(path: str) -> Layout:
    """How the excerpt of ``path`` (a file's path or a page's URL) joins its lines."""
    if path.startswith(("http://", "https://")):
        return "prose"
    suffix = PurePosixPath(path).suffix.casefold()
    if suffix in _CODE_SUFFIXES:
        return "code"
    if suffix in _PROSE_SUFFIXES:
        return "prose"
    return "lines"


def _normalize(text: str) -> str:
    return " ".join(text.split())


def quote_matches(quote: str, lines: list[str]) -> bool:
    """Whether ``quote`` is verbatim in ``lines`` up to line wrapping: a substring of the
    lines joined by single spaces, each line's whitespace collapsed and its list, quote
    or comment marker allowed to fall at a join."""
    wanted = _normalize(quote)
    joined = _normalize(" ".join(lines))
    if wanted in joined:
        return True
    stripped = _normalize(" ".join(_piece(line) for line in lines))
    return wanted in stripped


def _piece(line: str) -> str:
    """A line's text as a passage holds it: stripped, its marker and docstring quotes
    trimmed."""
    text = line.strip()
    text = _QUOTE_MARK.sub("", text, count=1)
    text = _LIST_ITEM.sub("", text, count=1)
    if text.startswith("#") and not text.startswith("#!"):
        text = text.lstrip("#").strip()
    for q in _DOC_DELIMITERS:
        text = text.removeprefix(q).removesuffix(q)
    return text.strip()


def _segments(text: str, begin: int, end: int, boundary: re.Pattern[str]
              ) -> list[tuple[int, int]]:
    """``text[begin:end]`` cut at ``boundary``: each piece's (start, end), whitespace
    trimmed, empty pieces left out."""
    out, at = [], begin
    for m in [*boundary.finditer(text, begin, end), None]:
        stop, resume = (m.start(), m.end()) if m is not None else (end, end)
        piece = text[at:stop]
        if piece.strip():
            first = at + len(piece) - len(piece.lstrip())
            out.append((first, first + len(piece.strip())))
        at = resume
    return out


def sentences(text: str) -> list[str]:
    """``text`` split where its sentences end (the rule passages use; each piece is a
    verbatim substring of ``text``)."""
    return [text[a:b] for a, b in _segments(text, 0, len(text), _SENTENCE_END)]


def _sentences(pieces: list[tuple[int, str]], limit: int, final: int) -> list[Passage]:
    """A paragraph's pieces (line index, text) joined and split into sentences; ``final``
    is the excerpt's last line index (a sentence running into it unfinished is cut)."""
    pieces = [(i, text) for i, text in pieces if text]
    if not pieces:
        return []
    joined = " ".join(text for _, text in pieces)
    starts: list[tuple[int, int]] = []  # (character offset, line index) of each piece
    at = 0
    for i, text in pieces:
        starts.append((at, i))
        at += len(text) + 1

    def lines_of(first: int, stop: int) -> tuple[int, int]:
        def line_at(offset: int) -> int:
            return max(i for begin, i in starts if begin <= offset)
        return line_at(first), line_at(stop - 1)

    out: list[Passage] = []
    sentences = _segments(joined, 0, len(joined), _SENTENCE_END)
    for number, (first, stop) in enumerate(sentences):
        sentence = joined[first:stop]
        start, end = lines_of(first, stop)
        # the excerpt starts inside this sentence, or stops before it ends
        cut_before = number == 0 and start == 0 and sentence[:1].islower()
        cut_after = (number == len(sentences) - 1 and end == final
                     and not sentence.rstrip(_CLOSERS).endswith(_ENDINGS))
        whole = not (cut_before or cut_after)
        if len(sentence) <= limit:
            out.append(Passage(start, end, sentence, whole))
            continue
        # too long to quote: its clauses if each fits, else its lines (cut, each alone)
        clauses = _segments(joined, first, stop, _CLAUSE_END)
        if len(clauses) > 1 and all(b - a <= limit for a, b in clauses):
            out += [Passage(*lines_of(a, b), joined[a:b], whole) for a, b in clauses]
        else:
            out += [Passage(i, i, text, whole=False) for i, text in pieces if start <= i <= end]
    return out


def _titled(previous: str, text: str) -> bool:
    """Whether ``previous`` is a title line rather than the start of a wrapped sentence:
    short, unpunctuated, and followed by a capitalized line (a page's "Retry storms"
    above its first paragraph). A wrapped line runs near the wrap width."""
    before = previous.strip()
    return (len(before) < _TITLE_CHARS and not before.endswith(tuple(".!?:;,("))
            and text[:1].isupper())


def _prose(lines: list[str], limit: int) -> list[Passage]:
    out: list[Passage] = []
    paragraph: list[tuple[int, str]] = []
    fenced = False

    def flush() -> None:
        nonlocal paragraph
        out.extend(_sentences(paragraph, limit, len(lines) - 1))
        paragraph = []

    for i, line in enumerate(lines):
        text = line.strip()
        if _FENCE.match(text):
            flush()
            fenced = not fenced
            continue
        if fenced:  # a code block inside a document: each line alone
            out.append(Passage(i, i, text))
            continue
        if not text or text.startswith("#") or text.startswith("|") or set(text) <= set("=-~^*"):
            flush()
            if text.startswith("#"):
                out.append(Passage(i, i, text))  # a heading is its own line
            continue
        if _SETTING.match(text):  # ``MAX_RETRIES = 5``, ``retry_on: 503``: a line of data
            flush()
            out.append(Passage(i, i, text))
            continue
        if _LIST_ITEM.match(text) or (paragraph and _titled(lines[paragraph[-1][0]], text)):
            flush()
        paragraph.append((i, _piece(line)))
    flush()
    return out


def _depth(line: str) -> int:
    """How many more brackets ``line`` opens than it closes (strings and a trailing
    comment do not count). ``str.count`` per bracket: a character loop here was most of
    the writer's time on a code-heavy request (bench/extractive_draft.py)."""
    code = _STRING.sub("", line) if ("'" in line or '"' in line) else line
    code = code.split("#", 1)[0]
    return (code.count("(") + code.count("[") + code.count("{")
            - code.count(")") - code.count("]") - code.count("}"))


def _code(lines: list[str], limit: int) -> list[Passage]:
    out: list[Passage] = []
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        opener = _DOC_OPEN.match(text)
        if text.startswith("#") and not text.startswith("#!"):
            run = []
            while i < len(lines) and lines[i].strip().startswith("#"):
                run.append((i, _piece(lines[i])))
                i += 1
            out += _sentences(run, limit, len(lines) - 1)
            continue
        if opener is not None:
            delimiter = opener.group(1)
            rest = text[opener.end():]
            run = [(i, _piece(text[opener.start(1):] if rest else ""))]
            closed = delimiter in rest
            i += 1
            while not closed and i < len(lines):
                inner = lines[i].strip()
                closed = delimiter in inner
                if not inner:  # a blank line ends the docstring's paragraph
                    out += _sentences(run, limit, len(lines) - 1)
                    run = []
                else:
                    run.append((i, _piece(inner.split(delimiter, 1)[0] if closed else inner)))
                i += 1
            out += _sentences(run, limit, len(lines) - 1)
            continue
        depth, j = _depth(lines[i]), i
        while depth > 0 and j + 1 < len(lines) and j - i + 1 < MAX_STATEMENT_LINES:
            j += 1
            depth += _depth(lines[j])
        if depth == 0 and j > i:
            joined = " ".join(lines[k].strip() for k in range(i, j + 1))
            if len(joined) <= limit:
                out.append(Passage(i, j, joined))
                i = j + 1
                continue
        # alone: a line that closes what it opens, or a statement the excerpt cuts
        out.append(Passage(i, i, text, whole=_depth(lines[i]) <= 0))
        i += 1
    return out


def passages(lines: list[str], kind: Layout, limit: int) -> list[Passage]:
    """The excerpt's quotable passages in line order (see the module docstring). A
    passage's text is not yet screened: the caller decides what is worth quoting."""
    if kind == "prose":
        return _prose(lines, limit)
    if kind == "code":
        return _code(lines, limit)
    return [Passage(i, i, line.strip()) for i, line in enumerate(lines)]
