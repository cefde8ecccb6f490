"""Tenant isolation against anyone with namespace access, through the real dev server, a
real worker, the real SQLite store and the console's HTTP interface (SECURITY.md, "Tenant
isolation").

The attack: read the victim's pending draft from its status query, then start a workflow
of one's own directly through Temporal — claiming the victim's tenant and listing one's own
console account as reviewer — with ``carried`` set to a state holding the victim's draft.
The job refuses that state at once (``ForgedCarriedState``), and neither its console page,
its review page nor ``pressroom status``/``explain``/``trace`` show anything of the
victim's. A reader pointed at another job's draft or manifest refuses it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError

from activities.runtime import ActivityRuntime
from cli import commands
from client import errors
from contracts.job_spec import JobSpec
from contracts.ownership import ForeignArtifact
from contracts.workflow_messages import JobState, JobStatus, ResearchJobInput
from settings import Settings
from tests.waiting import wait_for
from tests.webconsole.consolekit import http, make_accounts, open_console, review_for, sign_in
from tests.workflows.jobkit import running_worker, start_job, wait_status
from workflows.research_job import ResearchJobWorkflow
from workflows.temporal_config import WORKFLOW_TYPE

pytestmark = [pytest.mark.temporal, pytest.mark.asyncio(loop_scope="session")]


async def test_a_forged_carried_state_shows_nothing_of_the_victim(
        client: Client, runtime: ActivityRuntime, task_queue: str, store_url: str,
        tmp_path: Path, make_spec: Callable[..., JobSpec]) -> None:
    accounts = make_accounts(tmp_path / "accounts", "alice", "bob")
    victim = make_spec(scope={"tenant": "victimco", "project": "secret", "task": "t1"},
                       review=review_for(accounts, "alice"))
    # bob claims the victim's tenant and project and lists himself as the reviewer
    attacker = make_spec(job_id=f"job-{uuid.uuid4().hex[:10]}",
                         scope={"tenant": "victimco", "project": "secret", "task": "t1"},
                         review=review_for(accounts, "bob"))
    console = await open_console(client, store_url, accounts)
    settings = Settings.from_env({"PRESSROOM_DATABASE_URL": store_url,
                                  "PRESSROOM_HOME": str(tmp_path / "home")})
    try:
        async with running_worker(client, runtime, task_queue), http(console) as bob_web:
            handle = await start_job(client, victim, task_queue)
            seen = await wait_status(handle, {"awaiting_review"})
            assert seen.pending_draft is not None
            forged = JobState(stage="review", status="awaiting_review",
                              pending_draft=seen.pending_draft,
                              manifest_ids=list(seen.manifest_ids))
            bad = await client.start_workflow(
                WORKFLOW_TYPE, ResearchJobInput(spec=attacker, carried=forged),
                id=attacker.job_id, task_queue=task_queue)
            async def settled() -> bool | None:  # ended, or answering as if it were real
                if (await bad.describe()).status != WorkflowExecutionStatus.RUNNING:
                    return True
                with contextlib.suppress(Exception):
                    if (await bad.query(ResearchJobWorkflow.status)).status == "awaiting_review":
                        return True
                return None
            await wait_for(settled, 30, "the forged job ended or answering")
            await sign_in(bob_web, "bob")
            page = await bob_web.get(f"/jobs/{attacker.job_id}")
            assert page.status_code == 200
            draft_text = (await _draft(runtime, victim, seen)).decode("utf-8")
            secret_line = next(line for line in draft_text.splitlines() if len(line) > 30)
            for shown in (page.text, (await bob_web.get(f"/jobs/{attacker.job_id}/review")).text):
                assert seen.pending_draft.content_hash not in shown
                assert secret_line not in shown
            for manifest_id in seen.manifest_ids:
                assert (await bob_web.get(
                    f"/jobs/{attacker.job_id}/manifests/{manifest_id}")).status_code == 404
            assert (await bob_web.get(f"/jobs/{victim.job_id}")).status_code == 404

            with pytest.raises(WorkflowFailureError) as failed:  # at once, not after a wait
                await asyncio.wait_for(bad.result(), 30)
            cause = failed.value.cause
            assert getattr(cause, "type", None) == "ForgedCarriedState"
            assert getattr(cause, "non_retryable", False)

            status: JobStatus = await bad.query(ResearchJobWorkflow.status)
            assert status.pending_draft is None and status.manifest_ids == []

            # the CLI's readers: status, explain and trace of the attacker's job show nothing
            # of the victim's, and a status naming another job's draft is refused
            address = client.service_client.config.target_host
            out = io.StringIO()
            quiet = Console(file=out, width=200)
            view = await commands.show_status(quiet, settings, attacker.job_id, address)
            assert view.failure is not None and "carried state" in view.failure
            with pytest.raises(errors.JobNotFound):
                await commands.explain(quiet, settings, attacker.job_id, address=address)
            with pytest.raises(errors.JobNotFound):
                await commands.trace(quiet, settings, attacker.job_id, address=address)
            assert seen.pending_draft.content_hash not in out.getvalue()
            assert secret_line not in out.getvalue()
            foreign = seen.model_copy(update={"job_id": attacker.job_id})
            with pytest.raises(ForeignArtifact):
                await commands.pending_draft_body(foreign, settings)
    finally:
        await console.close()


async def _draft(runtime: ActivityRuntime, spec: JobSpec, seen: JobStatus) -> bytes:
    from activities.runtime import principal_of

    assert seen.pending_draft is not None
    store = await runtime.store()
    _rec, body = await store.get("article_draft", seen.pending_draft.artifact_id,
                                 principal=principal_of(spec),
                                 revision=seen.pending_draft.revision)
    return bytes(body)
