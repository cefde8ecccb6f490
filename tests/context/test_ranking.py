"""Ranking among eligible items: supersession, coverage, missing topics, load modes, limits."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from context import Ready, assemble, count_tokens
from context.limits.blocks import data_block
from context.limits.source_limits import (
    _FAILURE,
    _SECTION_SPLIT,
    _failure_matches,
    _mentions,
    excerpt_code,
    failures_of_log,
    relevant_sections,
)
from context.policy import SourceLimit
from context.ranking.relevance import RankInfo, coverage_first, supersede
from context.seal.render import MISSING_EVIDENCE_HEADING, parse_data_blocks
from context.vocabulary import LoadMode, SourceType
from tests.context.builders import AS_OF, code, item, request, topic, web


def _ready(*cands: object, **kw: object) -> Ready:
    out = assemble(request(list(cands), **kw))  # type: ignore[arg-type]
    assert isinstance(out, Ready), out.manifest.blocked_detail
    return out


def test_superseded_by_newer_revision_of_same_key() -> None:
    old = item("policy-v1", "rate limit 429: retry 3 times", canonical_key="rl", revision="1")
    new = item("policy-v2", "rate limit 429: retry 5 times", canonical_key="rl", revision="2")
    out = _ready(new, old)
    ex = {e.item_id: e for e in out.manifest.excluded}
    assert ex["policy-v1"].reason == "superseded"
    assert ex["policy-v1"].superseded_by == "policy-v2"
    assert ex["policy-v1"].hard_gate is None
    assert all(v == "passed" for v in ex["policy-v1"].hard_gate_results.values())
    assert "policy-v2" in {i.item_id for i in out.manifest.included}


def test_supersession_order_is_total_and_deterministic() -> None:
    a = item("a", "x", canonical_key="k", revision="10")
    b = item("b", "x", canonical_key="k", revision="9")
    c = item("c", "x", canonical_key="k", revision="abc",
             observed_at=AS_OF - timedelta(hours=1))
    winners, losers = supersede([c, b, a])
    assert [w.item_id for w in winners] == ["a"]
    assert sorted(loser.item_id for loser, _ in losers) == ["b", "c"]


def test_evidence_covering_no_required_topic_is_not_required() -> None:
    out = _ready(item("changelog", "New buttons in the admin UI."),
                 item("rl", "On HTTP 429 wait for Retry-After."))
    ex = {e.item_id: e for e in out.manifest.excluded}
    assert ex["changelog"].reason == "not_required"
    assert ex["changelog"].stage == "coverage"


def test_control_and_task_items_are_placed_by_policy_not_by_topic() -> None:
    out = _ready(item("rl", "On HTTP 429 wait."))
    zones = {i.item_id: i.zone for i in out.manifest.included}
    assert zones["policy-system"] == "control" and zones["job-spec"] == "task"


def test_missing_topics_are_rendered_prominently_with_instruction() -> None:
    out = _ready(item("rl", "On HTTP 429 wait."),
                 required_topics=(topic("rate-limit", "429"), topic("expense-policy", "hotel")))
    assert out.manifest.missing_topics == ["expense-policy"]
    assert out.rendered_evidence.startswith(f"## {MISSING_EVIDENCE_HEADING}")
    assert "Do not infer" in out.rendered_evidence
    task_msgs = [m for m in out.serialized.payload["messages"] if m["role"] == "user"]
    notice = [m for m in task_msgs if MISSING_EVIDENCE_HEADING in m["content"]]
    assert notice and "- expense-policy" in notice[0]["content"]
    # it comes before any evidence block
    first_data = next(i for i, m in enumerate(task_msgs) if m["content"].startswith("<<<DATA"))
    assert task_msgs.index(notice[0]) < first_data


def test_coverage_first_order_spends_budget_on_uncovered_topics() -> None:
    infos = [
        RankInfo(False, ("a",), 5, True, 9, 10, "a1"),
        RankInfo(False, ("a",), 4, True, 9, 10, "a2"),
        RankInfo(False, ("b",), 0, True, 0, 10, "b1"),
    ]
    assert [r.item_id for r in coverage_first(infos, ["a", "b"])] == ["a1", "b1", "a2"]


def test_topic_declared_on_item_counts_as_coverage() -> None:
    out = _ready(item("tagged", "Backoff guidance.", topics=("rate-limit",)))
    inc = {i.item_id: i for i in out.manifest.included}
    assert inc["tagged"].covered_topics == ["rate-limit"]
    assert out.manifest.missing_topics == []


def test_disclose_renders_an_index_entry_instead_of_the_body() -> None:
    body = "HTTP 429 handling notes.\n" + "detail line\n" * 200
    mem = item("mem-1", body, source_type=SourceType.MEMORY_OBJECT,
               trust="governed_memory_candidate", summary="Notes on 429 handling", revision="3")
    out = _ready(mem, item("rl", "On HTTP 429 wait."))
    inc = {i.item_id: i for i in out.manifest.included}
    assert inc["mem-1"].load_mode == LoadMode.DISCLOSE
    assert inc["mem-1"].partition == "background"
    view = {v.item_id: v for v in parse_data_blocks(out.rendered_evidence)}["mem-1"]
    assert "detail line" not in view.content
    for needle in ("id: mem-1", "summary: Notes on 429 handling", "revision: 3",
                   f"content_hash: {mem.content_hash}"):
        assert needle in view.content
    rec = next(t for t in out.manifest.transforms if t.type == "disclose")
    assert all(v == "passed" for v in rec.preservation_assertions.values())


def test_code_is_excerpted_with_a_correct_line_range() -> None:
    lines = [f"line {n}" for n in range(1, 501)]
    lines[349] = "raise RateLimited(429)  # rate limit"
    src = code("big", "\n".join(lines), lines=(101, 600))
    out = _ready(src)
    inc = {i.item_id: i for i in out.manifest.included}["big"]
    start, end = inc.source_ref["line_start"], inc.source_ref["line_end"]
    assert end - start + 1 == 200
    assert start <= 450 <= end  # line 350 of the content is line 450 of the file
    view = {v.item_id: v for v in parse_data_blocks(out.rendered_evidence)}["big"]
    assert view.content.split("\n")[450 - start] == "raise RateLimited(429)  # rate limit"
    assert view.citation == f"pi@53fa77cc:src/types.ts#L{start}-L{end}"
    rec = next(t for t in out.manifest.transforms if t.type == "excerpt")
    assert rec.preservation_assertions["line_range_present"] == "passed"
    assert rec.input_digest == src.content_hash
    assert [n["type"] for n in inc.source_lineage][-1] == "excerpt"


def test_test_log_keeps_failures_and_the_artifact_ref() -> None:
    log = "\n".join([f"test_{n} PASSED" for n in range(300)]
                    + ["test_retry_429 FAILED", "E  assert 3 == 5", "rate limit exceeded"])
    item_ = item("log", log, source_type=SourceType.TEST_LOG, trust="repository_evidence")
    out = _ready(item_)
    view = {v.item_id: v for v in parse_data_blocks(out.rendered_evidence)}["log"]
    assert "test_retry_429 FAILED" in view.content
    assert "test_1 PASSED" not in view.content
    assert item_.content_hash in view.content


def test_web_page_keeps_relevant_sections_plus_hash() -> None:
    sections = [f"# Section {n}\nunrelated text {n}" for n in range(20)]
    sections[7] = "# Limits\nOn HTTP 429 clients must back off."
    page = web("page", "\n\n".join(sections), observed_at=AS_OF - timedelta(days=1))
    out = _ready(page)
    view = {v.item_id: v for v in parse_data_blocks(out.rendered_evidence)}["page"]
    assert "must back off" in view.content
    assert "unrelated text 3" not in view.content
    assert page.content_hash in view.content


def test_ranking_lost_beyond_the_policy_rank_cap() -> None:
    from tests.context.builders import POLICY

    data = POLICY.model_dump(mode="json")
    data["placement"]["max_evidence_items"] = 2
    from context import policy_from_mapping

    capped = policy_from_mapping(data)
    docs = [item(f"d{i}", "HTTP 429 " + "wait " * i, authority=10 - i) for i in range(4)]
    out = _ready(*docs, policy=capped)
    ex = {e.item_id: e for e in out.manifest.excluded}
    assert {i for i, e in ex.items() if e.reason == "ranking_lost"} == {"d2", "d3"}
    assert ex["d3"].stage == "ranking" and "at most 2" in ex["d3"].detail
    assert {"d0", "d1"} <= {i.item_id for i in out.manifest.included}


def test_task_text_naming_a_topic_does_not_hide_missing_evidence() -> None:
    from tests.context.builders import control, task

    job = task("job", "Task: what is the hotel cap in the expense policy?")
    out = _ready(control(), job, item("changelog", "New buttons."), base=False,
                 required_topics=(topic("expense-policy", "expense policy"),))
    assert out.manifest.missing_topics == ["expense-policy"]
    assert "## MISSING EVIDENCE" in out.rendered_evidence


def test_disclosed_index_entry_does_not_cover_a_topic() -> None:
    mem = item("mem", "HTTP 429 notes", source_type=SourceType.MEMORY_OBJECT,
               trust="governed_memory_candidate")
    out = _ready(mem)
    assert {i.item_id: i.load_mode for i in out.manifest.included}["mem"] == LoadMode.DISCLOSE
    assert out.manifest.missing_topics == ["rate-limit"]


_LOG_WORDS = ["ok", "FAIL", "failed", "Errors", "xerror", "assertEqual", "é", "Traceback",
              "exception_", "", " ", "\r", "错误", "_fail", "ERROR:", "failure."]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_LOG_WORDS), max_size=4), min_size=1, max_size=40),
       st.integers(min_value=1, max_value=12))
def test_log_excerpt_matches_the_per_line_definition(
    rows: list[list[str]], max_lines: int
) -> None:
    """The one-pass failure scan keeps exactly the lines a per-line search keeps."""
    text = "\n".join(" ".join(r) for r in rows)
    lines = text.split("\n")
    limited = failures_of_log(
        item("log", text, source_type=SourceType.TEST_LOG, trust="repository_evidence"),
        SourceLimit(mode="failures_plus_artifact_ref", max_lines=max_lines),
    )
    if len(lines) <= max_lines:
        assert limited is None
        return
    keep: list[int] = []
    for i, ln in enumerate(lines):
        if _FAILURE.search(ln):
            keep += [j for j in range(i, min(i + 3, len(lines))) if j not in keep]
        if len(keep) >= max_lines:
            break
    keep = sorted(keep)[:max_lines] or list(range(len(lines) - max_lines, len(lines)))
    assert limited is not None
    assert limited.item.content.rsplit("\n", 1)[0] == "\n".join(lines[i] for i in keep)


_CODE_WORDS = ["retry", "RETRY", "Retry-After", "ß", "strasse", "İ", "cache", "x", "", " ",
               "def", "\t", "backoff", "BACKOFF"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_CODE_WORDS), max_size=4), min_size=1, max_size=40),
       st.integers(min_value=1, max_value=12),
       st.lists(st.sampled_from(["retry", "strasse", "backoff", "i̇", "cache"]), max_size=3))
def test_code_excerpt_matches_the_per_line_definition(
    rows: list[list[str]], max_lines: int, terms: list[str]
) -> None:
    """Folding the whole text once picks the same window as folding line by line."""
    text = "\n".join(" ".join(r) for r in rows)
    lines = text.split("\n")
    limited = excerpt_code(code("c", text), SourceLimit(mode="excerpt_with_line_range",
                                                         max_lines=max_lines), tuple(terms))
    if len(lines) <= max_lines:
        assert limited is None
        return
    hits = [1 if _mentions(ln, tuple(terms)) else 0 for ln in lines]
    sums = [sum(hits[s:s + max_lines]) for s in range(len(lines) - max_lines + 1)]
    start = sums.index(max(sums))
    assert limited is not None
    assert limited.item.content == "\n".join(lines[start:start + max_lines])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*_LOG_WORDS, "FAILURES", "failedx", "assert_", "Assertion",
                                 "TRACEBACK:", "errorerror", "fail-fail", "\n"]),
                max_size=30))
def test_failure_scan_finds_what_the_case_insensitive_regex_finds(words: list[str]) -> None:
    text = " ".join(words)
    assert [(m.start(), m.end()) for m in _failure_matches(text)] == \
        [(m.start(), m.end()) for m in _FAILURE.finditer(text)]


_PAGE_PARTS = ["Retry", "ß", "STRASSE", "İ", "cache", "\n\n", "\n", "\n# Head\n", "  \n  \n",
               "x", "backoff", "\t", "ﬁle", "Ǆ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PAGE_PARTS), max_size=60),
       st.integers(min_value=1, max_value=4),
       st.lists(st.sampled_from(["retry", "strasse", "i̇", "cache", "file", "ǆ"]), max_size=3))
def test_page_sections_match_the_per_section_definition(
    parts: list[str], max_sections: int, terms: list[str]
) -> None:
    """Folding the whole page once picks the sections folding each section would."""
    text = " ".join(parts)
    limited = relevant_sections(web("p", text), SourceLimit(
        mode="relevant_sections_plus_hash", max_sections=max_sections), tuple(terms))
    sections = [s for s in _SECTION_SPLIT.split(text) if s.strip()]
    picked = [s for s in sections if _mentions(s, tuple(terms))][:max_sections]
    if len(sections) <= max_sections or not picked:
        assert limited is None
        return
    assert limited is not None
    assert limited.item.content.rsplit("\n\n", 1)[0] == "\n\n".join(picked)


def test_a_chinese_question_ranks_by_its_words_too() -> None:
    """CJK text has no spaces: its decision terms are character bigrams, so the item that
    answers a Chinese question outranks a shorter one that only names the topic."""
    rules = item("rules", "禁运规则\uff1a禁运稿件在发布方规定的时间之前不得发布\uff0c"
                 "时间一律换算为UTC。")
    archive = item("archive", "禁运档案\uff1a2025年的禁运记录已归档\uff0c仅供研究。")
    assert len(archive.content) < len(rules.content)  # the size tie-break alone picks it
    one = max(count_tokens(data_block(rules)), count_tokens(data_block(archive)))
    out = _ready(archive, rules, question="禁运新闻稿可以在发布方规定的时间之前发布吗\uff1f",
                 decision="", required_topics=(topic("embargo", "禁运"),),
                 evidence_budget=one)
    assert [v.item_id for v in parse_data_blocks(out.rendered_evidence)] == ["rules"]
    assert {e.item_id: e.reason for e in out.manifest.excluded} == {"archive": "budget_evicted"}
