"""Passages: the whole sentences and statements an excerpt's draft quotes cite.

Pure functions over lines; the fixture texts are the bundled example's sources (wrapped
Markdown, a text file, a Python module) and the shapes that broke quotes before: a list
item's continuation, an excerpt starting or stopping mid-sentence, a title over a page's
first paragraph, "e.g." and version numbers inside a sentence.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from activities.providers.passages import Passage, layout, passages, quote_matches

LIMIT = 240


def _spans(lines: list[str], kind: str = "prose") -> list[tuple[int, int, str, bool]]:
    return [(p.start, p.end, p.text, p.whole)
            for p in passages(lines, kind, LIMIT)]  # type: ignore[arg-type]


def test_a_wrapped_markdown_sentence_is_one_passage_over_its_lines() -> None:
    lines = [
        "A callable may raise `RetryAfter(seconds)` to ask for a specific wait (for example the",
        "value of an HTTP `Retry-After` header); the wait is still capped at `max_delay`.",
    ]
    assert _spans(lines) == [(0, 1, " ".join(lines), True)]


def test_a_list_item_s_continuation_lines_belong_to_its_sentences() -> None:
    lines = [
        "- Only idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE) are retried by default.",
        "  A POST or PATCH is retried only when the caller sends an `Idempotency-Key` header, so",
        "  a request that may have reached the server is not repeated blindly.",
        "- Retried statuses: 429, 502, 503, 504, and connection errors.",
    ]
    assert [(a, b) for a, b, _, _ in _spans(lines)] == [(0, 0), (1, 2), (3, 3)]
    assert _spans(lines)[1][2] == ("A POST or PATCH is retried only when the caller sends an "
                                   "`Idempotency-Key` header, so a request that may have "
                                   "reached the server is not repeated blindly.")


def test_sentences_split_where_they_end_not_at_abbreviations_or_versions() -> None:
    lines = ["Use e.g. a cap of 30 s with version 0.2.0 or later. Add jitter!",
             "Why? Retry storms."]
    assert [text for _, _, text, _ in _spans(lines)] == [
        "Use e.g. a cap of 30 s with version 0.2.0 or later.", "Add jitter!", "Why?",
        "Retry storms."]
    assert [(a, b) for a, b, _, _ in _spans(lines)] == [(0, 0), (0, 0), (1, 1), (1, 1)]


def test_an_excerpt_that_cuts_a_sentence_says_so() -> None:
    starts_inside = ["min(max_delay, base_delay * multiplier ** n). Without a cap, a long",
                     "outage makes clients sleep for minutes."]
    assert [(text[:12], whole) for _, _, text, whole in _spans(starts_inside)] == [
        ("min(max_dela", False), ("Without a ca", True)]
    stops_inside = ["Bound the number of attempts (max_attempts) and the total time spent",
                    "retrying, and"]
    assert [whole for *_, whole in _spans(stops_inside)] == [False]


def test_headings_blank_lines_fences_and_titles_end_a_paragraph() -> None:
    lines = ["# Retries", "Retry storms", "When a server answers 429 it is telling you when.",
             "", "```python", "policy = ExponentialBackoff(", "```", "Last line here."]
    assert [(a, b) for a, b, _, _ in _spans(lines)] == [(0, 0), (1, 1), (2, 2), (5, 5), (7, 7)]


def test_code_joins_comment_runs_docstrings_and_bracketed_statements() -> None:
    lines = [
        "def retry(fn, policy=ExponentialBackoff(), sleep=time.sleep,",
        "          retry_on=(Exception,)):",
        '    """Call fn() until it succeeds or policy.max_attempts attempts have failed.',
        "",
        "    A RetryAfter from fn overrides the computed backoff for that attempt, capped at",
        "    policy.max_delay.",
        '    """',
        "    # a wait the server asked for still obeys the cap, so a",
        "    # misbehaving server cannot park the client",
        "    last_error = None",
        "    wait = min(policy.max_delay,",
    ]
    spans = _spans(lines, "code")
    assert [(a, b, whole) for a, b, _, whole in spans] == [
        (0, 1, True), (2, 2, True), (4, 5, True), (7, 8, True), (9, 9, True), (10, 10, False)]
    assert spans[0][2] == ("def retry(fn, policy=ExponentialBackoff(), sleep=time.sleep, "
                           "retry_on=(Exception,)):")
    assert spans[2][2] == ("A RetryAfter from fn overrides the computed backoff for that "
                           "attempt, capped at policy.max_delay.")
    assert spans[3][2] == ("a wait the server asked for still obeys the cap, so a misbehaving "
                           "server cannot park the client")


def test_a_setting_in_a_text_file_is_a_line_of_its_own() -> None:
    lines = ["Client defaults, as the settings module defines them:", "",
             "MAX_RETRIES = 5", "BASE_DELAY_SECONDS = 0.5", "max_delay: 30",
             "Note: a prose line with a colon", "wraps like any other."]
    assert [(a, b, text) for a, b, text, _ in _spans(lines)][1:] == [
        (2, 2, "MAX_RETRIES = 5"), (3, 3, "BASE_DELAY_SECONDS = 0.5"), (4, 4, "max_delay: 30"),
        (5, 6, "Note: a prose line with a colon wraps like any other.")]


def test_a_log_keeps_its_lines_apart() -> None:
    lines = ["2026-01-01 ERROR retry 1 failed: timeout", "2026-01-01 ERROR retry 2 failed"]
    assert layout("logs/test-run.log") == "lines"
    assert [(a, b) for a, b, _, _ in _spans(lines, "lines")] == [(0, 0), (1, 1)]


def test_layout_follows_the_path() -> None:
    assert layout("README.md") == layout("notes.txt") == layout("LICENSE") == "prose"
    assert layout("https://sre.example.org/blog/retry-storms") == "prose"
    assert layout("backoff_lib/policy.py") == layout("src/main.rs") == "code"
    assert layout("config.yaml") == layout("data.json") == "lines"


def test_a_sentence_too_long_to_quote_splits_at_clauses_else_falls_back_to_lines() -> None:
    clause = "the wait is capped at max_delay and the jitter is drawn uniformly " * 2
    lines = [f"First {clause.strip()}; then {clause.strip()};",
             f"and last {clause.strip()}."]
    spans = passages(lines, "prose", LIMIT)
    assert len(spans) == 3 and all(len(p.text) <= LIMIT and p.whole for p in spans)
    assert [(p.start, p.end) for p in spans] == [(0, 0), (0, 0), (1, 1)]
    one = ["word " * 30 + "and", "word " * 30 + "end."]
    spans = passages(one, "prose", LIMIT)
    assert [(p.start, p.end, p.whole) for p in spans] == [(0, 0, False), (1, 1, False)]


def test_quote_matches_is_verbatim_up_to_line_wrapping() -> None:
    lines = ["- A POST is retried only when the caller sends", "  an `Idempotency-Key` header."]
    assert quote_matches("A POST is retried only when the caller sends an `Idempotency-Key` "
                         "header.", lines)
    assert not quote_matches("A POST is retried whenever the caller sends an "
                             "`Idempotency-Key` header.", lines)


_WORDS = st.sampled_from(["retry", "Retry", "the", "wait.", "e.g.", "0.2.0", "(cap", "x)",
                          "`max_delay`.", "Jitter!", "why?", "a;", "-", "#", '"""', "```"])
_LINES = st.lists(st.lists(_WORDS, max_size=12).map(" ".join), max_size=12)


@settings(max_examples=300, deadline=None)
@given(lines=_LINES, kind=st.sampled_from(["prose", "code", "lines"]))
def test_every_passage_is_in_order_and_quotes_its_own_lines(lines: list[str], kind: str) -> None:
    found: list[Passage] = passages(lines, kind, 60)  # type: ignore[arg-type]
    previous = -1
    for passage in found:
        assert 0 <= passage.start <= passage.end < len(lines), passage
        assert passage.start >= previous, (passage, found)
        previous = passage.start
        if passage.text:
            assert quote_matches(passage.text, lines[passage.start:passage.end + 1]), passage


def test_a_note_widens_to_the_sentences_its_lines_start_or_end_and_no_further() -> None:
    """The offline agent's note cites the whole sentences its chosen line is part of — not
    the neighbouring sentences those share a line with, which would chain the widening
    across the paragraph."""
    from activities.providers.research_agent import _whole_sentences

    lines = ["Use capped backoff: the delay after attempt n is",
             "min(max_delay, base * 2 ** n). Without a cap, a long",
             "outage makes clients sleep. Add jitter.",
             "MAX_RETRIES = 5"]
    assert _whole_sentences(lines, 0, 0, "guide.txt") == (0, 1)
    assert _whole_sentences(lines, 1, 1, "guide.txt") == (0, 2)
    assert _whole_sentences(lines, 3, 3, "guide.txt") == (3, 3)
    # code: the statement a line opens
    code = ["    def __init__(self, base_url,", "                 max_attempts=5):", "        pass"]
    assert _whole_sentences(code, 0, 0, "client.py") == (0, 1)
