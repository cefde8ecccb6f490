"""``CheckJobPathsWorkflow``: ask a worker on a job's task queue whether its roots allow the
job's paths, before ``pressroom run`` starts the job.

The roots are a worker's, set where it starts, and the client cannot see them; a job whose
paths the worker refuses used to start anyway and stop at its first step as
``needs_operator: … PathOutsideRoots``. Every worker registers this workflow and its one
activity, ``check_job_paths_here`` (``contracts.path_check.verdict``: the check
``store_job_spec`` runs, with the worker's own roots), so ``pressroom run`` runs it on the
job's task queue with a short bound (``client.jobs.check_paths_on_worker``) and refuses
at submit what the worker would refuse.

It is not a job: its workflow type is not ``ResearchJobWorkflow`` and it carries no search
attributes, so neither ``pressroom list`` nor the console's job list (both query by that
type: ``workflows.visibility.jobs_query``) shows it; its id (``CHECK_ID_PREFIX`` plus a
random suffix) holds a ``:``, which no job id may (``contracts.job_spec``), so it can
never take a job's id. Deterministic: one activity, no retry, no other command.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contracts.activity_messages import PathCheckInput, PathCheckResult

#: the workflow type and the activity every worker registers for it
CHECK_WORKFLOW_TYPE = "CheckJobPathsWorkflow"
CHECK_ACTIVITY = "check_job_paths_here"
#: a check's workflow id starts with this; a job id can hold no ``:``
CHECK_ID_PREFIX = "pressroom:check-job-paths:"
#: one attempt's bound on the worker (a path check stats a few paths and runs git once per
#: local repository)
CHECK_ACTIVITY_TIMEOUT = timedelta(seconds=30)


@workflow.defn(name=CHECK_WORKFLOW_TYPE)
class CheckJobPathsWorkflow:
    @workflow.run
    async def run(self, inp: PathCheckInput) -> PathCheckResult:
        result: PathCheckResult = await workflow.execute_activity(
            CHECK_ACTIVITY, inp, result_type=PathCheckResult,
            start_to_close_timeout=CHECK_ACTIVITY_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1))
        return result


__all__ = ["CHECK_ACTIVITY", "CHECK_ID_PREFIX", "CHECK_WORKFLOW_TYPE", "CheckJobPathsWorkflow"]
