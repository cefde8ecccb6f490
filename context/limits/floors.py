"""Proven lower bounds on cl100k token counts, cheap enough to skip the tokenizer.

Why this exists: a cold assembly over thousands of candidates sends a small fraction of
them; the budget stage only has to *prove* that the rest do not fit, and a lower bound
that already exceeds the room left is such a proof. Tokenizing every candidate exactly
just to evict it was most of the cold assembly's time (``bench/RESULTS.md``).

**The bound.** ``cl100k_base`` first splits text with its pre-tokenizer pattern
(``'(?i:[sdmt]|ll|ve|re)`` | ``[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++`` | ``\\p{N}{1,3}+`` |
`` ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+`` | ``\\s++$`` | ``\\s*[\\r\\n]`` | ``\\s+(?!\\S)`` |
``\\s``; ``tiktoken`` exposes it as ``Encoding._pat_str``) and every
non-empty piece becomes at least one token. No alternative matches a non-whitespace
character, then whitespace, then a non-whitespace character again: whitespace occurs in a
piece only as its first character, as trailing newlines, or in whitespace-only pieces. So
the first characters of two different maximal non-whitespace runs ("words") always lie in
different pieces, and ``tokens(text) >= words(text)``. The same holds for any prefix of
``text`` (its word starts are word starts of ``text``) and for any string that embeds
``text`` after a newline, as a data block does (escaping inserts only non-whitespace).

Whitespace here is the pattern's ``\\s`` — Unicode ``White_Space``. ``str.split()`` also
splits on U+001C..U+001F, which ``\\s`` does not match, so those four characters are
mapped to a letter before splitting (merging words only lowers the count).
``tests/context/test_floors.py`` checks both the character sets and the bound against
the real tokenizer.
"""

from __future__ import annotations

__all__ = ["prefix_floor", "words"]

_SPLIT_ONLY_IN_PYTHON = "\x1c\x1d\x1e\x1f"
_AS_LETTER = str.maketrans(dict.fromkeys(_SPLIT_ONLY_IN_PYTHON, "x"))
# A first look at this many characters per token of room usually settles it (English
# runs 4-6 characters per word); only when it does not is the whole text split.
_PREFIX_CHARS_PER_TOKEN = 8
_MIN_PREFIX = 256


def words(text: str) -> int:
    """Maximal runs of non-``White_Space`` characters: a lower bound on cl100k tokens."""
    if any(c in text for c in _SPLIT_ONLY_IN_PYTHON):
        text = text.translate(_AS_LETTER)
    return len(text.split())


def prefix_floor(text: str, room: int) -> tuple[int, bool]:
    """``(bound, whole)``: a lower bound on the tokens of ``text``, exceeding ``room``
    whenever a prefix proportional to ``room`` shows it; ``whole`` says the bound counted
    all of ``text`` (so it is the best this bound gets, for any room).

    Reads only that prefix when it already proves the text does not fit, so proving that
    a large item cannot enter a nearly full budget costs little.
    """
    prefix = max(_MIN_PREFIX, (room + 1) * _PREFIX_CHARS_PER_TOKEN)
    if len(text) > prefix:
        found = words(text[:prefix])
        if found > room:
            return found, False
    return words(text), True
