"""The word-count lower bound of ``context.limits.floors`` against the real cl100k tokenizer."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from context.limits.floors import prefix_floor, words
from context.tokens import _ENCODING, _tokens

# Unicode White_Space: what the tokenizer pattern's \s matches (25 code points)
WHITE_SPACE = frozenset(map(chr, [
    *range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
]))
PYTHON_ONLY = frozenset("\x1c\x1d\x1e\x1f")


def test_python_whitespace_is_white_space_plus_four_separators() -> None:
    """The proof needs str.split()'s whitespace to be \\s plus exactly the four handled."""
    py = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert py == WHITE_SPACE | PYTHON_ONLY


def test_the_pattern_the_proof_is_about_is_the_one_in_use() -> None:
    """If tiktoken ships another pre-tokenizer pattern, the bound must be re-derived."""
    assert _ENCODING._pat_str == (
        r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"
        r" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
    )


def test_separators_python_splits_on_are_not_word_breaks() -> None:
    # ".\x1c." is one pre-tokenizer piece (\x1c is not \s); str.split() alone sees two
    # words, which the proof does not allow, so floors.words maps \x1c..\x1f first
    text = ".\x1c."
    assert len(text.split()) == 2
    assert words(text) == 1 <= _tokens(text)


def test_every_whitespace_character_between_words() -> None:
    for ws in sorted(WHITE_SPACE | PYTHON_ONLY):
        for left, right in (("ab", "cd"), (".", ","), ("1", "2"), ("é", "ü"), ("<<", ">>")):
            text = f"{left}{ws}{right}{ws}{ws}{left}"
            assert words(text) <= _tokens(text), repr(text)


_PIECES = st.sampled_from([
    " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u3000", "\x1c", "\x1f", "\u2028", "\x85",
    "word", "Retry", "'s", "'LL", "123456", "3.14", "<<<", "\u2060", "é", "日本語", "🙂",
    "(", ")", "!!", "-->", "sk-abc", "\x00", "\\", "\"", "_", "a_b",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=60), st.text(max_size=40))
def test_words_never_exceed_tokens(pieces: list[str], noise: str) -> None:
    text = "".join(pieces) + noise
    assert words(text) <= _tokens(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=80), st.integers(min_value=0, max_value=40))
def test_floor_is_a_lower_bound_also_inside_a_data_block(pieces: list[str], room: int) -> None:
    text = "".join(pieces)
    block = f'<<<DATA id="x" sha256="0">>>\n{text}\n<<<END DATA sha256="0">>>'
    floor, _whole = prefix_floor(text, room)
    assert floor <= _tokens(text)
    assert floor <= _tokens(block)


def test_floor_reads_a_prefix_when_that_settles_it() -> None:
    text = "alpha beta " * 50_000
    bound, whole = prefix_floor(text, 10)
    assert 10 < bound < words(text) and not whole  # only the prefix was split
    assert prefix_floor(text, 10**9) == (words(text), True) == (100_000, True)
