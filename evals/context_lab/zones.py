"""Where the data blocks are in a model-visible text (for the trust-zone grader).

The engine owns the block format (``context.seal.render``: markers bound to the content hash;
content is escaped so it never contains ``<<<``, hence the first ``<<<`` after a header
is that block's end marker). The lab finds the spans from that documented shape and
requires the engine's own verifying parser (``parse_data_blocks``, which re-hashes every
block) to agree on the number of blocks; text whose blocks are malformed or forged is
treated as having no blocks at all — conservative by design. Everything outside the
spans is what the model reads as prose or instructions.
"""

from __future__ import annotations

import re

from context import DataBlockError, parse_data_blocks

_HEADER = re.compile(r"^<<<DATA [^\n]*>>>\n", re.MULTILINE)


def block_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each verified data block in ``text``, in order."""
    try:
        expected = len(parse_data_blocks(text))
    except DataBlockError:
        return []
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := _HEADER.search(text, pos)) is not None:
        end = text.find("<<<", m.end())
        close = text.find(">>>", end) if end >= 0 else -1
        if close < 0:
            return []
        spans.append((m.start(), close + 3))
        pos = close + 3
    return spans if len(spans) == expected else []


def outside_data_blocks(text: str) -> str:
    """``text`` with every verified data block cut out (the gaps joined by newlines)."""
    pieces = []
    cursor = 0
    for start, end in block_spans(text):
        pieces.append(text[cursor:start])
        cursor = end
    pieces.append(text[cursor:])
    return "\n".join(pieces)
