"""Errors a user of the job runtime can get, each turned into one clear CLI line.

Hierarchy::

    JobError                  (contracts.errors) base of everything the client side raises
    │                         on purpose
    ├── JobSpecError          (contracts.errors) the spec is invalid; names the field
    ├── JobExists             a job with this id was already started (never duplicated)
    ├── JobNotFound           no job with this id exists on the cluster
    ├── JobNotWaiting         the job is not in a state that accepts this action
    ├── ReviewRejected        the review Update's validator refused the decision (nothing
    │                         was recorded); the message is the validator's reason
    ├── CommandRefused        a signed resolve or cancel was refused by the workflow (not
    │                         blocked, or the signature is missing, unlisted or replayed)
    ├── ReviewerKeyError      (cli.reviewer_keys) a reviewer key cannot be created,
    │                         found or used; names the file, never its content
    ├── UnresolvedRef         a git source's ``ref`` did not resolve to a commit at submit
    │                         (``cli.pins``); nothing was started
    ├── TemporalUnavailable   the Temporal server cannot be reached at the given address
    └── SearchAttributesMissing  the namespace lacks (or cannot be given) the job's search
                              attributes (``workflows.visibility``); names them and the
                              ``temporal operator search-attribute create`` command

``JobError`` and ``JobSpecError`` live in ``contracts.errors`` because the job spec, which
raises ``JobSpecError``, is a contract that activities load too; the rest are the client's.
"""

from __future__ import annotations

from contracts.errors import JobError


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


class CommandRefused(JobError):
    pass


class UnresolvedRef(JobError):
    pass


class SearchAttributesMissing(JobError):
    pass


__all__ = ["CommandRefused", "JobExists", "JobNotFound", "JobNotWaiting", "ReviewRejected",
           "SearchAttributesMissing", "TemporalUnavailable", "UnresolvedRef"]
