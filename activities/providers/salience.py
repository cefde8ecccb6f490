"""How much a quotable line says about a term: what the offline agent cites first.

A careful reader answering "what is the default?" cites the assignment that holds it, not
the ``import`` or the ``__all__`` entry that names it; answering "what does it do?" cites
the docstring or comment that explains it, not the bare ``class Foo:`` line. ``score`` puts
that in a fixed order (higher is better), a pure function of the line and the terms:

* 5 — a definition with its value: an assignment whose target holds the term
  (``SSL_HANDSHAKE_TIMEOUT = 60.0``, ``self._aborting = True``, ``x: int = 3``), or a
  signature giving the term a default (``def __init__(self, maxsize=0):``);
* 4 — prose about it: a comment or docstring sentence (several words, few code symbols;
  an inline code span such as ``:exc:`~pkg.Error``` counts as one word);
* 3 — code that uses it (a call, a condition, a return);
* 1 — a bare header naming it: ``class Foo:``, ``class Foo(Base):``, ``def foo(self):``;
* 0 — an entry of an export or import list (``"FooError",``, ``FooError,``), a doctest
  prompt line, or a line without the term.

The agent reads around the best hits and notes the best line of what it read; it notes a
header or list entry only when nothing better about the term was found.
"""

from __future__ import annotations

import re

DEFINITION, PROSE, USE, HEADER, NOTHING = 5, 4, 3, 1, 0

_LIST_ENTRY = re.compile(r"^(?:[\"']?[A-Za-z_][\w.]*[\"']?\s*,\s*)*[\"']?[A-Za-z_][\w.]*[\"']?,?$")
_HEADER = re.compile(r"^(?:(?:async\s+)?def\s+\w+\s*\((?P<params>[^)]*)\)?\s*(?:->[^:]*)?"
                     r"|class\s+\w+\s*(?:\([^)]*\))?)\s*:?\s*$")
_ASSIGN = re.compile(r"^(?P<target>[\w.\[\]'\"]+)\s*(?::[^=]+)?(?<![=!<>])=(?!=)\s*\S")
_WORD = re.compile(r"[A-Za-z]{2,}")
_CODE_SPAN = re.compile(r"(?::[\w:]+:)?`+[^`]+`+")


def rank(line: str, terms: list[str], question_words: frozenset[str] = frozenset(),
         path: str = "", exact_terms: list[str] | None = None) -> int:
    """``score`` made finer for choosing between hits: a term matched as a whole identifier
    beats a longer name that merely contains it (``_abort`` against ``_aborting``, whose
    definition then counts as a use at most), and a file whose name the question uses
    (``taskgroups.py`` for a question about ``TaskGroup``) comes first among equals. A
    term written as asked (``SSL_HANDSHAKE_TIMEOUT``, not the ``ssl_handshake_timeout``
    parameter) and a definition at module level (a constant) rank higher too."""
    base = score(line, terms)
    lowered = line.casefold()
    exact = exact_terms is not None and any(t in line for t in exact_terms)
    whole = any(re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", lowered) for t in terms)
    value = base * 4 + (2 if whole else 0)
    if not whole:
        value = min(value, USE * 4)
    if base and exact:
        value += 2
    if base == DEFINITION and line[:1].isalpha():
        value += 1
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold().rstrip("s")
    if stem and len(stem) >= 4 and any(stem in w or w in stem for w in question_words):
        value += 1
    return value


def question_words(question: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in re.findall(r"[A-Za-z]{4,}", question))


def score(line: str, terms: list[str]) -> int:
    """The line's rank for ``terms`` (lower-cased), see the module docstring."""
    text = line.strip()
    lowered = text.casefold()
    if not any(t in lowered for t in terms):
        return NOTHING
    if text.startswith((">>>", "...")) or _LIST_ENTRY.match(text):
        return NOTHING
    if (m := _HEADER.match(text)) is not None:
        params = m.group("params") or ""
        if "=" in params and any(t in params.casefold() for t in terms):
            return DEFINITION
        return HEADER
    if (m := _ASSIGN.match(text)) is not None and any(
            t in m.group("target").casefold() for t in terms):
        return DEFINITION
    # an inline code span of a docstring (``:exc:`~pkg.Error```, ```name```) is one word
    # of its sentence, not code: "Raise :exc:`~a.b.Error` on mismatches" is prose
    spans = len(_CODE_SPAN.findall(text))
    plain = _CODE_SPAN.sub(" ", text)
    code = sum(plain.count(c) for c in "()[]{}=_.:")
    words = len(_WORD.findall(plain)) + spans
    if text.startswith("#") or (words >= 5 and code <= words // 2) or (
            spans and words >= 4 and code == 0):
        return PROSE
    return USE


_DOC_OPEN = re.compile(r"^[rRuUbB]?(?:\"\"\"|\'\'\')")


def docstring_after(lines: list[str], index: int) -> int | None:
    """The index of the first prose line of the docstring right after the header at
    ``lines[index]`` (``\"\"\"`` alone on a line is skipped), if the lines show one."""
    at = index + 1
    if at < len(lines) and _DOC_OPEN.match(lines[at].strip()):
        opener = _DOC_OPEN.match(lines[at].strip())
        rest = lines[at].strip()[opener.end():].strip() if opener else ""
        if rest:
            return at
        at += 1
        if at < len(lines) and len(_WORD.findall(lines[at])) >= 3:
            return at
    return None
