"""Untrusted text made safe and visible in a page: escaped, with hidden characters shown.

Everything the console displays that came from a source, the model, a file name or a
reviewer passes through ``shown``: HTML-escaped (Jinja2's autoescape does the same for
plain values; this module is for the places that build markup themselves), and every
invisible code point — each format character (``Cf``) and default-ignorable code point,
bidi overrides, zero-width characters and Unicode TAG characters included
(``context.invisible``) — replaced by a visible marker (``⟨U+202E⟩``), so
``evil\\u202edm.md`` cannot pose as ``evilmd.md`` and a sentence spelled in TAG characters
cannot sit unseen on a reviewer's screen. ``marked`` does the same for every value a
template prints (the console's Jinja2 ``finalize``), so no page shows one unmarked,
whether or not its template asked for ``shown``; ``verbatim`` is the one way out, for a
form field that must post back exactly what the job holds. Cost: one C-level search per
string; nothing is removed, only made visible.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from context import INVISIBLE, has_invisible
from context import INVISIBLE_PATTERN as PATTERN

#: every code point shown as a marker (``context.invisible.INVISIBLE``)
HIDDEN = INVISIBLE
_MARK = "\x00"  # placeholder: escape() leaves it alone, the source text cannot hold it


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds a character ``shown`` makes visible."""
    return has_invisible(text)


def _marker(ch: str) -> str:
    return f"⟨U+{ord(ch):04X}⟩"


def shown(text: object) -> Markup:
    """``text`` escaped, each hidden character as a visible ``⟨U+XXXX⟩`` marker."""
    raw = str(text).replace(_MARK, "")
    if not has_hidden(raw):
        return escape(raw)
    parts: list[str] = []
    pos = 0
    for m in PATTERN.finditer(raw):
        parts.append(str(escape(raw[pos:m.start()])))
        parts.append(f'<span class="hidden-char" title="hidden character">'
                     f"{_marker(m.group())}</span>")
        pos = m.end()
    parts.append(str(escape(raw[pos:])))
    return Markup("".join(parts))


class Verbatim(Markup):
    """Escaped text printed as it is, invisible characters included (``verbatim``)."""

    __slots__ = ()


def verbatim(text: object) -> Verbatim:
    """``text`` escaped but not marked: for a hidden form field whose value must post back
    unchanged (a destination the signed decision names). Never for text a reviewer reads."""
    return Verbatim(escape(text))


def marked(value: object) -> object:
    """What a template prints, with every invisible character as a plain-text marker.

    The console's Jinja2 ``finalize``: it runs on every ``{{ … }}`` before autoescaping. A
    plain marker (no tag), so it is as safe inside an attribute as in text; markup built by
    ``shown`` already holds no invisible character, markup from anywhere else (a
    ``join`` of escaped strings) is marked too."""
    if isinstance(value, Verbatim) or value is None or isinstance(value, int | float):
        return value
    text = value if isinstance(value, str) else str(value)
    if not has_hidden(text):
        return value
    out = PATTERN.sub(lambda m: _marker(m.group()), text)
    return Markup(out) if isinstance(value, Markup) else out


__all__ = ["HIDDEN", "Verbatim", "has_hidden", "marked", "shown", "verbatim"]
