"""Errors that belong to the contracts: raised on one side of a boundary, named on the other.

An exception raised in an activity reaches the workflow as a Temporal failure whose
``type`` is the class name, and the workflow's retry policy names the permanent ones
(``workflows.temporal_config.ACTIVITY_NON_RETRYABLE_ERRORS``) by class. The classes Pressroom
itself defines for that live here, where workflows, activities and the CLI can all import
them without importing each other:

- ``JobSpecError`` — a job spec is invalid (``contracts.job_spec``); the CLI catches it as a
  ``JobError``, the root of the client-side errors in ``client.errors``.
- ``SourceSpecError`` — a source location cannot be interpreted
  (``contracts.source_specs.expand_location``, on the worker); ``SourceError`` is also the
  root of the acquisition errors in ``activities.sources.errors``.
- ``UnpinnedSource`` — a ``SourceSpecError``: a git source reached a worker without a full
  commit id (only a ``ref``, which ``pressroom run`` resolves at submit; or a value built
  around the spec's validation). The worker never acquires it.
- ``UnknownSourceKind`` — a ``SourceSpecError``: a source's ``kind`` has no registered
  reader (``activities.sources.registry``); it is never read as another kind.
- ``PublishRefused`` — the stored review does not authorize the publication.
- ``JobIdReused`` — a workflow with an earlier job's id tried to add to that job's spec or
  replace its article (the first run id differs); ``CarriedStateMismatch`` — a continued
  run's carried state does not name this job's stored spec.
- ``PathRefused`` — a path a job names may not be used (``contracts.path_safety``): on
  ``/proc``, ``/sys`` or ``/dev``, inside Pressroom's own state, not a regular file (a FIFO,
  socket or device), over the size limit, relative, or turned into a symbolic link after it
  was checked; its subclass ``PathOutsideRoots``: resolved, it lies outside every root the
  operator set for its kind (source or publish roots); its subclass ``RepositoryRefused``:
  a local repository that is not one of its own folder, or whose git folders or alternates
  lie elsewhere (``contracts.git_safety``); and its subclass ``PathOutsideTenantRoots``:
  with tenant roots bound (``settings.Settings.tenant_source_roots`` /
  ``tenant_publish_roots``), it lies outside the roots of the job's own tenant — the
  message names the path and that tenant, and the other tenant whose root holds it. All
  are ``JobError``s (the CLI prints one line at submit) and non-retryable
  ``ApplicationError``s (a worker refusing a path fails the step at once).
- ``ReviewerNotRegistered`` — a worker that accepts only registered reviewers
  (``--registered-reviewers-only``) met a reviewer or operator key the operator's registry
  does not hold for that name (a ``JobError`` and a non-retryable ``ApplicationError``).
- ``ProviderError`` and its subclasses — a model provider failed (``activities.providers``):
  ``ProviderUnavailable`` (the provider's SDK is not installed; not retryable),
  ``ProviderConfigError`` (unknown provider name, missing API key, or a payload built for
  another adapter than the provider speaks; not retryable), ``ProviderInputError`` (the
  payload cannot be read; not retryable) and ``ProviderCallError`` (the remote API failed;
  it carries ``retryable`` so Temporal retries only what may succeed, and an API's
  ``Retry-After`` as Temporal's next retry delay, so the retry waits as long as asked).

``PublishRefused`` and the provider errors are Temporal ``ApplicationError`` subclasses
whose ``type`` is the class name and that carry their own ``non_retryable`` flag: raised
inside an activity, a missing key fails the step at once instead of being retried until
the activity times out.
"""

from __future__ import annotations

import math
from datetime import timedelta

from temporalio.exceptions import ApplicationError


class JobError(Exception):
    """Base class of the job runtime's client-side errors (see ``client.errors``)."""


class JobSpecError(JobError, ValueError):
    """A job spec is invalid; the message names the file (when known) and the field.

    ``problems``: the same, one entry per problem (each names its field), for a caller
    that prints one line per problem (``pressroom check``); empty when not split."""

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class SourceError(Exception):
    """Root of every error raised while acquiring a source (see ``activities.sources.errors``)."""


class SourceSpecError(SourceError, ValueError):
    """A source spec names something that cannot be interpreted.

    Raised to the caller: it is a bad job spec, found before any acquisition tool runs.
    """


class UnpinnedSource(SourceSpecError):
    """A git source has no full commit id to read; no acquisition (or fetch) runs for it."""


class UnknownSourceKind(SourceSpecError):
    """A source's ``kind`` has no registered reader (``activities.sources.registry``): a bad
    job spec, never read as another kind."""


class ForkRefused(ApplicationError):
    """A fork that may not start: unsigned or foreign-signed, a spec that is not its
    parent's with the signed edits, or a parent state that cannot be verified. One line;
    never retried (docs/architecture.md#forking-a-job)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split())[:500], type=ForkRefused.__name__,
                         non_retryable=True)


class PublishRefused(ApplicationError):
    """The stored review does not authorize this publication (never retried)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type=PublishRefused.__name__, non_retryable=True)


class JobIdReused(ApplicationError):
    """A workflow reusing an earlier job's id tried to take over that job's records (its
    stored spec, its published article); refused, nothing written (never retried)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type=JobIdReused.__name__, non_retryable=True)


class CarriedStateMismatch(ApplicationError):
    """A continued run's carried state names a spec revision that is not this job's stored
    spec (never retried: the job ends)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type=CarriedStateMismatch.__name__, non_retryable=True)


class PathRefused(JobError, ApplicationError):
    """A path a job names may not be used; the message names the path and why (never what
    the file holds)."""

    def __init__(self, message: str) -> None:
        ApplicationError.__init__(self, message, type=PathRefused.__name__, non_retryable=True)


class PathOutsideRoots(PathRefused):
    """A path, resolved (symbolic links followed), lies outside every root of its kind."""

    def __init__(self, message: str) -> None:
        ApplicationError.__init__(self, message, type=PathOutsideRoots.__name__,
                                  non_retryable=True)


class RepositoryRefused(PathRefused):
    """A local repository reaches outside its folder or the roots (``contracts.git_safety``):
    no repository of its own, a git folder elsewhere, or alternates outside the roots."""

    def __init__(self, message: str) -> None:
        ApplicationError.__init__(self, message, type=RepositoryRefused.__name__,
                                  non_retryable=True)


class PathOutsideTenantRoots(PathOutsideRoots):
    """With tenant roots bound, a path lies outside the roots of the job's own tenant."""

    def __init__(self, message: str) -> None:
        ApplicationError.__init__(self, message, type=PathOutsideTenantRoots.__name__,
                                  non_retryable=True)


class ReviewerNotRegistered(JobError, ApplicationError):
    """A reviewer or operator key is not the one the operator's registry holds for its name,
    on a worker that accepts only registered reviewers (never retried)."""

    def __init__(self, message: str) -> None:
        ApplicationError.__init__(self, message, type=ReviewerNotRegistered.__name__,
                                  non_retryable=True)


class ProviderError(ApplicationError):
    """Root of every model-provider error."""

    def __init__(
        self, message: str, *, retryable: bool = False, next_retry_delay: timedelta | None = None
    ) -> None:
        super().__init__(
            message, type=type(self).__name__, non_retryable=not retryable,
            next_retry_delay=next_retry_delay,
        )
        self.retryable = retryable


class ProviderUnavailable(ProviderError):
    """The SDK a provider needs is not installed."""


class ProviderConfigError(ProviderError, ValueError):
    """A provider is misconfigured (name, key, adapter)."""


class ProviderInputError(ProviderError, ValueError):
    """The serialized request cannot be read by the provider."""


class ProviderCallError(ProviderError):
    """The remote API call failed; ``retryable`` says whether trying again may help.

    ``retry_after`` is the wait in seconds the API asked for (its ``Retry-After`` header);
    it becomes Temporal's ``next_retry_delay`` instead of the retry policy's backoff,
    capped at ``MAX_RETRY_AFTER``. A missing, non-finite or non-positive value leaves the
    policy's backoff in charge.
    """

    # A longer Retry-After is treated as this: a retry parked an hour out on a server's
    # word stalls the job silently; past this, the workflow's own timeouts should decide.
    MAX_RETRY_AFTER = timedelta(minutes=10)

    def __init__(
        self, message: str, *, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(
            message, retryable=retryable, next_retry_delay=self._retry_delay(retry_after)
        )

    @classmethod
    def _retry_delay(cls, seconds: float | None) -> timedelta | None:
        if seconds is None or not math.isfinite(seconds) or seconds <= 0:
            return None
        return min(timedelta(seconds=seconds), cls.MAX_RETRY_AFTER)


__all__ = [
    "JobError",
    "JobSpecError",
    "PathOutsideRoots",
    "PathOutsideTenantRoots",
    "PathRefused",
    "ProviderCallError",
    "ProviderConfigError",
    "ProviderError",
    "ProviderInputError",
    "ProviderUnavailable",
    "PublishRefused",
    "RepositoryRefused",
    "ReviewerNotRegistered",
    "SourceError",
    "SourceSpecError",
    "UnpinnedSource",
]


class WebFetchRefused(SourceError, ApplicationError):
    """A live web page (``kind: web_page`` with ``url:`` and no ``path:``) was not fetched:
    the message names the URL, the address or the limit and the problem — never what the
    response held (SECURITY.md, "Live web pages"). The subclasses say which rule refused
    it; all are permanent (the same URL and settings give the same answer), except
    ``WebFetchFailed``, a network or server failure a later attempt may get past."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        ApplicationError.__init__(self, message, type=type(self).__name__,
                                  non_retryable=not retryable)


class WebUrlRefused(WebFetchRefused):
    """Not an http(s) URL, a URL with credentials, or a host outside the operator's
    allow-list of domains (``PRESSROOM_WEB_ALLOWED_DOMAINS``)."""


class WebAddressRefused(WebFetchRefused):
    """The host resolves to an address the worker may not connect to: loopback, private,
    link-local, CGNAT, multicast, unspecified, reserved or a cloud metadata address, not
    in the operator's ``PRESSROOM_WEB_ALLOWED_NETWORKS``."""


class WebLimitExceeded(WebFetchRefused):
    """The response is over the size limit, took longer than the time limit, or redirected
    more often than allowed."""


class WebFetchFailed(WebFetchRefused):
    """The server could not be reached or answered with an error status: retryable unless
    the answer is one no retry changes (a 404)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message, retryable=retryable)
