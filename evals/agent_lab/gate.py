"""The agent eval's release gate: fixed thresholds over every question's result.

It passes only when all of these hold — each check names the questions that break it:

* every job reached its review (``awaiting_review``): none blocked, failed or stuck;
* mean key-line recall at least ``MIN_MEAN_RECALL``, and every question's at least
  ``MIN_QUESTION_RECALL``;
* uninformative quotes (bare headers, export-list entries) at most
  ``MAX_UNINFORMATIVE_SHARE`` of all findings;
* every declared source whose search found a topic term was read at least once;
* research turns and tokens per question at most the question's own ceilings
  (``max_turns``/``max_tokens`` in the questions file), else ``MAX_TURNS`` and
  ``MAX_TOKENS``.

The thresholds are what the agent of this release achieves with a margin (bench/RESULTS.md,
"The offline agent's quality eval"): the agent before the reading rules fails the recall and
uninformative-quote checks, and the one before topics advanced side by side exceeds every
bundled question's turn and token ceilings.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from evals.agent_lab.runner import QuestionResult

MIN_MEAN_RECALL = 0.85
MIN_QUESTION_RECALL = 0.6
MAX_UNINFORMATIVE_SHARE = 0.05
MAX_TURNS = 8
MAX_TOKENS = 40_000


class GateCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    questions: list[str]


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True)

    questions: int
    mean_key_line_recall: float
    uninformative_share: float
    total_turns: int
    total_tokens: int


class AgentReleaseGate(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    checks: list[GateCheck]
    summary: Summary


def summarize(results: Sequence[QuestionResult]) -> Summary:
    quotes = sum(r.findings for r in results)
    return Summary(
        questions=len(results),
        mean_key_line_recall=sum(r.key_line_recall for r in results) / max(1, len(results)),
        uninformative_share=sum(len(r.uninformative_quotes) for r in results) / max(1, quotes),
        total_turns=sum(r.turns for r in results),
        total_tokens=sum(r.tokens for r in results))


def release_gate(results: Sequence[QuestionResult]) -> AgentReleaseGate:
    summary = summarize(results)

    def check(name: str, failing: list[str], passed: bool | None = None) -> GateCheck:
        return GateCheck(name=name, passed=not failing if passed is None else passed,
                         questions=failing)

    checks = [
        check("every_job_reached_review",
              [r.id for r in results if r.status != "awaiting_review"]),
        check("mean_key_line_recall", [r.id for r in results if r.key_line_recall < 1.0],
              passed=summary.mean_key_line_recall >= MIN_MEAN_RECALL),
        check("every_question_recall",
              [r.id for r in results if r.key_line_recall < MIN_QUESTION_RECALL]),
        check("uninformative_quotes", [r.id for r in results if r.uninformative_quotes],
              passed=summary.uninformative_share <= MAX_UNINFORMATIVE_SHARE),
        check("every_source_with_a_hit_read", [r.id for r in results if r.unread_sources]),
        check("turns", [r.id for r in results if r.turns > (r.max_turns or MAX_TURNS)]),
        check("tokens", [r.id for r in results
                         if r.tokens > (r.max_tokens or MAX_TOKENS)]),
    ]
    return AgentReleaseGate(passed=all(c.passed for c in checks), checks=checks, summary=summary)
