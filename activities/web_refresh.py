"""``refresh_web_page``: a new stored revision of one live web page source; and
``web_pages``, the reader every activity that reads a job's sources uses.

``pressroom resolve --refresh-source NAME`` on a job whose source ``NAME`` is a live web
page (``kind: web_page`` with ``url:`` and no ``path:``) must make the job's later reads
see the page as it is now — not the revision fetched at its first read
(``activities.sources.web_revisions``). The workflow runs this activity for it before it
re-acquires the source; its write id is the workflow's step, so a retry after a crash
finds the revision the first attempt stored and fetches nothing. The fetch runs under the
worker's rules (``contracts.web_policy``); a refusal is a typed ``WebFetchRefused``.
"""

from __future__ import annotations

from activities.runtime import ActivityRuntime, pause_point
from activities.sources.web_revisions import WebPages
from contracts.activity_messages import RefreshWebPageInput, WebPageRevisionResult
from contracts.errors import SourceSpecError
from contracts.job_spec import JobSpec
from contracts.source_specs import WebPageSourceSpec


async def web_pages(runtime: ActivityRuntime, spec: JobSpec) -> WebPages:
    """``spec``'s live web pages at their stored revisions, fetched under the worker's
    rules (``runtime.web_policy``) on first read; the runtime's locks keep one worker's
    parallel calls from fetching one page twice."""
    return WebPages(await runtime.store(), spec, runtime.web_policy, locks=runtime.web_locks)


async def refresh_web_page(runtime: ActivityRuntime,
                           inp: RefreshWebPageInput) -> WebPageRevisionResult:
    spec = await runtime.spec_of(inp.job)
    source = next((s for s in spec.sources if s.name == inp.source_name), None)
    if not isinstance(source, WebPageSourceSpec) or not source.live:
        raise SourceSpecError(f"source {inp.source_name!r} is not a live web page of job "
                              f"{spec.job_id}; only a live page is fetched again")
    pages = await web_pages(runtime, spec)
    # the fault matrix's kill points around the write (tests/faults): the refresh is keyed
    # by its write id, so a rerun after either stores one revision
    await pause_point("refresh_web_page_before_write")
    revision = await pages.refresh(source, inp.write_id)
    await pause_point("refresh_web_page_after_write")
    return WebPageRevisionResult(source_name=source.name, revision=revision.revision,
                                 store_revision=revision.store_revision,
                                 final_url=revision.final_url, fetched_at=revision.fetched_at)
