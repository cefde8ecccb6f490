"""Invisible code points: every format character (Unicode category ``Cf``) and every
default-ignorable code point (``Default_Ignorable_Code_Point``).

Why one list: a reader cannot see these characters, so they can hide text — a bidi override
makes ``evil\\u202edm.md`` read as ``evilmd.md``; Unicode TAG characters (U+E0000..E007F)
spell a whole sentence (``ignore previous instructions…``) that renders as nothing while a
model reads every letter of it. The review console marks each of them
(``webconsole.shown``) and the instruction detector decodes and counts them
(``context.admission.security``, docs/context-engine.md#secrets-and-instruction-like-text)
from this same list.

The ranges are those of Unicode 15.1 (DerivedCoreProperties and the ``Cf`` category),
including the code points the standard reserves as default-ignorable (the whole of
U+E0000..E0FFF); a test holds them to every ``Cf`` code point ``unicodedata`` knows.
"""

from __future__ import annotations

import re

RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
#: every invisible code point
INVISIBLE = frozenset(c for a, b in RANGES for c in range(a, b + 1))
#: one of them, anywhere (a C-level search: a text without one costs one pass)
PATTERN = re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                                   for a, b in RANGES) + "]")
#: Unicode TAG characters: U+E0020..E007E shadow printable ASCII (U+E0041 is a hidden "A")
TAG_SHADOWED = range(0xE0020, 0xE007F)
#: characters that hide or reorder text rather than shape it: TAG characters and bidi
#: embeddings, overrides and isolates (a zero-width joiner in an emoji, a soft hyphen or a
#: Persian zero-width non-joiner are typography, and are only counted)
HIDING = frozenset([*range(0xE0000, 0xE0080), *range(0x202A, 0x202F), *range(0x2066, 0x206A)])

#: what a model reads in place of each invisible character: a TAG's ASCII shadow, else
#: nothing (``ig\\u200bnore`` reads as ``ignore``)
_READS_AS = {c: (chr(c - 0xE0000) if c in TAG_SHADOWED else None) for c in INVISIBLE}


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds an invisible code point."""
    return PATTERN.search(text) is not None


def count(text: str) -> int:
    """How many invisible code points ``text`` holds."""
    return sum(1 for _ in PATTERN.finditer(text))


def read_as(text: str) -> str:
    """``text`` as a reader that skips invisible characters but decodes TAG characters
    sees it: each TAG character becomes its ASCII shadow, every other invisible character
    is dropped."""
    return text.translate(_READS_AS)


__all__ = ["HIDING", "INVISIBLE", "PATTERN", "RANGES", "TAG_SHADOWED", "count",
           "has_invisible", "read_as"]
