"""``pressroom eval agent``: the offline agent's quality gate, as CI runs it.

The bundled questions run as real jobs on a real Temporal dev server (the session's, from
``tests/workflows/conftest.py``) with a real worker and SQLite store — no model API is
involved: the provider is the offline one. The gate must pass; every article must cite at
least one key line at its real location; and the CLI's ``--json`` is one document whose
gate agrees.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.agent_lab.dataset import BUNDLED_QUESTIONS, AgentDatasetError, load_questions
from evals.agent_lab.gate import release_gate
from evals.agent_lab.graders import findings, uninformative
from evals.agent_lab.runner import run_questions
from tests.workflows.conftest import client, temporal_env  # noqa: F401  (the dev server)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.temporal
@pytest.mark.asyncio(loop_scope="session")
async def test_the_bundled_agent_eval_passes_its_release_gate(client: Any) -> None:  # noqa: F811
    questions = load_questions(BUNDLED_QUESTIONS)
    results = await run_questions(questions, client=client)
    gate = release_gate(results)
    assert gate.passed, [c for c in gate.checks if not c.passed]
    for question, result in zip(questions, results, strict=True):
        assert result.status == "awaiting_review", result.id
        cited = findings(result.article)
        # at least one key line is quoted, from the key line's own file
        assert any(k.found_in(c.path, c.quote) for k in question.key_lines for c in cited), (
            result.id, result.article)
        assert not any(uninformative(c.quote) for c in cited), result.id


def test_graders_tell_headers_and_export_lists_from_definitions() -> None:
    for bare in ("class Foo:", "class PasswordHasher(Base):", "def verify(self):",
                 '"VerifyMismatchError",', "DEFAULT_TIME_COST,"):
        assert uninformative(bare), bare
    for told in ("DEFAULT_TIME_COST = default_params.time_cost",
                 "def __init__(self, maxsize=0):", "self._abort()",
                 "If maxsize is less than or equal to zero, the queue size is infinite."):
        assert not uninformative(told), told


def test_a_bad_questions_file_is_one_line_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "q.yaml"
    bad.write_text("questions:\n  - id: x\n    corpus: elsewhere\n    question: q\n"
                   "    topics: [{name: t, terms: [a]}]\n"
                   "    key_lines: [{path: p, match: a}]\n", encoding="utf-8")
    with pytest.raises(AgentDatasetError, match=r"field questions\.0\.corpus"):
        load_questions(bad)
    done = subprocess.run([sys.executable, str(ROOT / "pressroom.py"), "eval", "agent",
                           "--questions", str(bad), "--json"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "questions.0.corpus" in done.stderr


def test_a_question_s_own_turn_and_token_ceilings_gate_it() -> None:
    """A question's ``max_turns``/``max_tokens`` replace the gate's defaults for it: the
    same figures pass under the defaults and fail under the question's own ceilings."""
    from evals.agent_lab.runner import QuestionResult

    def result(**ceilings: int) -> QuestionResult:
        return QuestionResult(
            id="q", status="awaiting_review", turns=4, tokens=12_000, findings=1,
            key_lines=1, key_lines_cited=1, key_line_recall=1.0, missed_key_lines=[],
            uninformative_quotes=[], uninformative_share=0.0, sources_with_hits=[],
            unread_sources=[], article="", **ceilings)

    assert release_gate([result()]).passed
    failed = {c.name: c.questions for c in release_gate(
        [result(max_turns=3, max_tokens=10_000)]).checks if not c.passed}
    assert failed == {"turns": ["q"], "tokens": ["q"]}
    assert all(q.max_turns and q.max_tokens for q in load_questions(BUNDLED_QUESTIONS))
