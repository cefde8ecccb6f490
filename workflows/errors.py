"""Errors a user of the job runtime can get, each turned into one clear CLI line.

Hierarchy::

    JobError                  base class of everything the client side raises on purpose
    ├── JobSpecError          (workflows.job_spec) the spec is invalid; names the field
    ├── JobExists             a job with this id was already started (never duplicated)
    ├── JobNotFound           no job with this id exists on the cluster
    ├── JobNotWaiting         the job is not in a state that accepts this action
    ├── ReviewRejected        the review Update's validator refused the decision (nothing
    │                         was recorded); the message is the validator's reason
    └── TemporalUnavailable   the Temporal server cannot be reached at the given address
"""

from __future__ import annotations


class JobError(Exception):
    """Base class of the job runtime's client-side errors."""


class JobSpecError(JobError, ValueError):
    """A job spec is invalid; the message names the file (when known) and the field."""


class JobExists(JobError):
    pass


class JobNotFound(JobError):
    pass


class JobNotWaiting(JobError):
    pass


class ReviewRejected(JobError):
    pass


class TemporalUnavailable(JobError):
    pass

__all__ = ["JobError", "JobExists", "JobNotFound", "JobNotWaiting", "JobSpecError",
           "ReviewRejected", "TemporalUnavailable"]
