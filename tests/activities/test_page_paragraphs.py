"""A live page's paragraph, quoted by the offline agent and cited by the draft.

A page's extracted text is a paragraph per line, often longer than a quote may be
(``extractive.MAX_QUOTE_CHARS``), so ``fragments`` splits it into sentences. The agent
quotes the first sentence holding a term (``research_agent._quote``) — it used to quote
only a line that was one piece, so a topic only such a paragraph held ended exhausted. A
note citing a page keeps its line range in its data block's ``source`` (``blocks.
_item_source``), so the draft takes it as evidence and cites ``url#La-Lb``; an acquired
page excerpt, whose id carries its range, keeps the bare URL it always had.
"""

from __future__ import annotations

from activities.providers.extractive import MAX_QUOTE_CHARS, fragments, is_evidence
from activities.providers.research_agent import _quote
from context import SourceRef
from context.limits.blocks import block_citation, data_block, parse_data_blocks
from context.vocabulary import Trust
from tests.context.builders import item

PARAGRAPH = ("Adding jitter — randomizing each sleep, for example drawing it uniformly between "
             "zero and the exponential delay (“full jitter”) — decorrelates the clients. In "
             "our load tests full jitter cut the peak request rate after recovery by roughly "
             "a factor of four compared with plain exponential backoff.")
URL = "http://127.0.0.1:8480/blog/retry-storms"


def test_a_paragraph_too_long_to_quote_is_quoted_by_its_first_sentence_with_a_term() -> None:
    assert len(PARAGRAPH) > MAX_QUOTE_CHARS and len(fragments(PARAGRAPH)) == 2
    first, second = fragments(PARAGRAPH)
    assert _quote(PARAGRAPH, ["jitter"], set()) == first
    assert _quote(PARAGRAPH, ["peak request rate"], set()) == second
    # noted already: its second sentence is not noted again either — a quote of 100
    # characters or more that starts a line stands for it (the notes ledger cuts long
    # quotes), so one note per paragraph
    assert _quote(PARAGRAPH, ["jitter"], {first}) is None
    # a short first sentence noted: the next sentence with the term
    short = "Always use jitter. " + PARAGRAPH
    assert len(fragments(short)) == 3
    assert _quote(short, ["jitter"], {"Always use jitter."}) == first
    assert _quote(short, ["jitter"], {"Always use jitter.", first, second}) is None
    assert _quote(PARAGRAPH, ["retry-after"], set()) is None
    # a short line is still quoted whole, as before
    assert _quote("Retry with full jitter.", ["jitter"], set()) == "Retry with full jitter."


def _block_of(item_id: str) -> str:
    page = item(item_id, PARAGRAPH, trust=Trust.UNTRUSTED_EXTERNAL_DATA,
                source_ref=SourceRef(url=URL, locator="L5-L5", line_start=5, line_end=5))
    [block] = parse_data_blocks(data_block(page))
    return block.citation if is_evidence(block) else f"not evidence: {block.citation}"


def test_a_note_citing_a_page_is_evidence_with_its_line_range() -> None:
    assert _block_of("note:jitter:t0004-1#1") == f"{URL}#L5-L5"
    # an acquired excerpt's range is in its id: its source stays the bare URL
    page = item("retry-storms-blog:page#L5-L5", PARAGRAPH,
                trust=Trust.UNTRUSTED_EXTERNAL_DATA,
                source_ref=SourceRef(url=URL, locator="L5-L5", line_start=5, line_end=5))
    [block] = parse_data_blocks(data_block(page))
    assert block.citation == URL and block_citation(block) == f"{URL}#L5-L5"
