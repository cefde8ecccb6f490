"""Decoded views of encoded text: what a reader of the text will see, mapped back to it.

Why this exists (docs/context-engine.md#secrets-and-instruction-like-text): a secret is a
secret in what the model *reads*, not in the bytes it is carried in. A ``read`` result is
JSON, so a file's ``DB_PASSWORD = "Xk29…"`` reaches the detector as
``DB_PASSWORD = \\"Xk29…\\"`` — the quoted shape no longer matches and the unquoted one
cannot start at a backslash; a saved web page writes the same quotes as ``&quot;``; a key
word can hide behind ``\\u0070assword`` or ``%70assword``. The model decodes all of these
without effort. So the detector also scans a *decoded view* of every text that holds an
escape, and redacts what it finds *in the carrier* (the encoded text), at the escapes'
boundaries, so no escape is ever cut in half and the result stays what it was (valid JSON
stays valid JSON).

Carriers decoded, in one pass of one regular expression (escapes of different carriers
may mix: a JSON string holding HTML):

* JSON / JavaScript / Python string escapes: ``\\"``, ``\\'``, ``\\\\``, ``\\/``, ``\\b``,
  ``\\f``, ``\\n``, ``\\r``, ``\\t``, ``\\uXXXX`` (surrogate pairs joined), ``\\xXX``;
* HTML character references: ``&quot;``, ``&#34;``, ``&#x22;`` and every HTML5 name;
* percent-encoding of printable ASCII (``%22``, ``%3D``; a multi-byte UTF-8 sequence is
  left alone: it cannot spell a key word or a separator).

A view is decoded again while it still holds escapes, up to ``MAX_LEVELS`` (a JSON file
read through the JSON ``read`` result is two levels deep). Not decoded: base64, hex dumps,
compression — no cheap, unambiguous boundary tells an encoded secret from an identifier,
and decoding every base64-looking run would cost a pass per run and invent findings.

Cost: one C-level regex search for an escape on every text (a text without one costs
nothing more); a text with escapes is decoded (a Python step per escape, not per
character) and scanned again. ``bench/decoded_scan.py`` measures it.
"""

from __future__ import annotations

import html.entities
import re
from bisect import bisect_right
from dataclasses import dataclass

#: views decoded below the text itself (each one's escapes decoded once more)
MAX_LEVELS = 3

_SIMPLE = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
           "r": "\r", "t": "\t"}
_ENTITIES = html.entities.html5
#: the escapes of quotes and line breaks that make up most of a JSON result's escapes
_FAST = {**{f"\\{k}": v for k, v in _SIMPLE.items()}, "&quot;": '"', "&amp;": "&",
         "&lt;": "<", "&gt;": ">", "&#34;": '"', "&#39;": "'", "%22": '"', "%27": "'"}

_ESCAPE = re.compile(
    r"\\(?:(?P<pair>u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u(?P<u>[0-9a-fA-F]{4})|x(?P<x>[0-9a-fA-F]{2})|(?P<simple>[\"'\\/bfnrt]))"
    r"|&(?:#[xX](?P<hexref>[0-9a-fA-F]{1,6})|#(?P<decref>[0-9]{1,7})"
    r"|(?P<name>[A-Za-z][A-Za-z0-9]{1,31}));"
    r"|%(?P<pct>[2-7][0-9a-fA-F])")
#: what every escape starts with: a text holding none of these has no decoded view
ESCAPE_STARTS = ("\\", "&", "%")
#: an escape that may decode to a letter, a digit or another character some secret shape's
#: prefilter word holds (``\u0070``, ``&#x70;``, ``&pi;``, ``%70``, ``\/``); the others —
#: quotes, backslashes, line breaks, ``&amp;``, ``&lt;``, ``&gt;`` — only decode to
#: characters no prefilter word holds
_ESCAPE_SPELLING = re.compile(r"\\[ux/]")
_NAMED_SPELLING = re.compile(r"&#|&(?!(?:quot|amp|lt|gt|apos|nbsp);)[A-Za-z]")
_PERCENT_SPELLING = re.compile(r"%(?!22|27)[2-7][0-9a-fA-F]")


def may_spell(text: str) -> bool:
    """Whether decoding ``text`` may add an occurrence of a prefilter word: when not, the
    decoded view holds no word the text does not hold, and a text that passes no shape's
    prefilter needs no decoded view scanned (the cheap path of a clean result)."""
    # a one-character ``in`` first: it is nearly free, a regex pass is not
    return (("\\" in text and _ESCAPE_SPELLING.search(text) is not None)
            or ("&" in text and _NAMED_SPELLING.search(text) is not None)
            or ("%" in text and _PERCENT_SPELLING.search(text) is not None))


def _decoded(m: re.Match[str]) -> str | None:
    """The characters one escape stands for (``None``: not an escape after all)."""
    group = m.lastgroup
    value = m.group(group) if group else None
    if value is None:
        return None
    if group == "simple":
        return _SIMPLE[value]
    if group == "pair":
        hi, lo = int(value[1:5], 16), int(value[7:11], 16)
        return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
    if group == "name":
        return _ENTITIES.get(value + ";")
    code = int(value, 10 if group == "decref" else 16)
    if code > 0x10FFFF:
        return None
    return chr(code)


@dataclass(frozen=True)
class View:
    """A decoded text and where each of its escapes came from: ``escapes`` holds, per
    decoded escape, (start in the encoded text, end there, start in ``text``, length in
    ``text``), ascending."""

    text: str
    escapes: tuple[tuple[int, int, int, int], ...]
    #: each escape's start in ``text`` (for bisection)
    starts: tuple[int, ...]

    def encoded_span(self, start: int, end: int) -> tuple[int, int]:
        """The encoded span of decoded ``text[start:end]``, widened to whole escapes."""
        return self._at(start, end=False), self._at(end, end=True)

    def _at(self, pos: int, *, end: bool) -> int:
        # the last escape that starts at or before ``pos`` (before it, for an end)
        i = bisect_right(self.starts, pos - 1 if end else pos) - 1
        if i < 0:
            return pos
        enc_start, enc_end, dec_start, dec_len = self.escapes[i]
        inside = pos <= dec_start + dec_len if end else pos < dec_start + dec_len
        if inside:
            return enc_end if end else enc_start
        return enc_end + (pos - dec_start - dec_len)

    def inside_escape(self, pos: int) -> bool:
        """Whether encoded position ``pos`` is part of an escape (not a raw character)."""
        for enc_start, enc_end, _, _ in self.escapes:
            if enc_start <= pos < enc_end:
                return True
            if enc_start > pos:
                return False
        return False


def has_escape(text: str) -> bool:
    """Whether ``text`` may hold an escape (the cheap test before ``decode``)."""
    for c in ESCAPE_STARTS:
        if c in text:
            return True
    return False


def decode(text: str) -> View | None:
    """``text`` with every escape decoded once, or ``None`` when it holds none."""
    if not has_escape(text):
        return None
    parts: list[str] = []
    escapes: list[tuple[int, int, int, int]] = []
    pos = 0
    out_len = 0
    fast = _FAST.get
    for m in _ESCAPE.finditer(text):
        escape = m.group()
        chars = fast(escape) or _decoded(m)
        if chars is None:
            continue
        a, b = m.start(), m.start() + len(escape)
        parts.append(text[pos:a])
        out_len += a - pos
        parts.append(chars)
        escapes.append((a, b, out_len, len(chars)))
        out_len += len(chars)
        pos = b
    if not escapes:
        return None
    parts.append(text[pos:])
    return View("".join(parts), tuple(escapes), tuple(e[2] for e in escapes))


def views(text: str) -> list[View]:
    """The decoded views of ``text``, outermost first (each decodes the one before)."""
    found: list[View] = []
    current = text
    for _ in range(MAX_LEVELS):
        view = decode(current)
        if view is None:
            break
        found.append(view)
        current = view.text
    return found


def encoded_span(chain: list[View], start: int, end: int) -> tuple[int, int]:
    """A span of the innermost view of ``chain`` as a span of the original text."""
    for view in reversed(chain):
        start, end = view.encoded_span(start, end)
    return start, end


__all__ = ["MAX_LEVELS", "View", "decode", "encoded_span", "has_escape", "views"]
