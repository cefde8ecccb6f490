"""Untrusted text made safe and visible in a page: escaped, with hidden characters shown.

Everything the console displays that came from a source, the model, a file name or a
reviewer passes through ``shown``: HTML-escaped (Jinja2's autoescape does the same for
plain values; this module is for the places that build markup themselves), and every
bidirectional override, isolate and zero-width character replaced by a visible marker
(``⟨U+202E⟩``), so ``evil\\u202edm.md`` cannot pose as ``evilmd.md`` on a reviewer's screen.
Cost: one ``str.translate`` per string; nothing is removed, only made visible.
"""

from __future__ import annotations

from markupsafe import Markup, escape

#: characters that reorder or hide text: bidi embeddings, overrides and isolates, marks,
#: zero-width space/joiners, word joiner, BOM
HIDDEN = frozenset(
    [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C,
     0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF])
_MARK = "\x00"  # placeholder: escape() leaves it alone, the source text cannot hold it


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds a character ``shown`` makes visible."""
    return any(ord(ch) in HIDDEN for ch in text)


def shown(text: object) -> Markup:
    """``text`` escaped, each hidden character as a visible ``⟨U+XXXX⟩`` marker."""
    raw = str(text).replace(_MARK, "")
    if not has_hidden(raw):
        return escape(raw)
    parts: list[str] = []
    for ch in raw:
        if ord(ch) in HIDDEN:
            parts.append(f'<span class="hidden-char" title="hidden character">'
                         f"⟨U+{ord(ch):04X}⟩</span>")
        else:
            parts.append(str(escape(ch)))
    return Markup("".join(parts))


__all__ = ["HIDDEN", "has_hidden", "shown"]
