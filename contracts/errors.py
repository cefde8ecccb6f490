"""Errors that belong to the contracts: raised on one side of a boundary, named on the other.

``JobSpecError`` is raised while a job spec is validated (``contracts.job_spec``) and caught
by the CLI as a ``JobError``; ``SourceSpecError`` is raised when a source spec's location
cannot be interpreted (``contracts.source_specs.expand_location``, on the worker). Both
reach the workflow as activity failures whose type is the class name, and the workflow's
retry policy names them by class, so they live here, beside the data they reject, where
workflows, activities and the CLI can all import them without importing each other.

Hierarchies rooted here: ``JobError`` (the client-side job errors in ``workflows.errors``
subclass it) and ``SourceError`` (the acquisition errors in ``activities.sources.errors``
subclass it).
"""

from __future__ import annotations


class JobError(Exception):
    """Base class of the job runtime's client-side errors (see ``workflows.errors``)."""


class JobSpecError(JobError, ValueError):
    """A job spec is invalid; the message names the file (when known) and the field."""


class SourceError(Exception):
    """Root of every error raised while acquiring a source (see ``activities.sources.errors``)."""


class SourceSpecError(SourceError, ValueError):
    """A source spec names something that cannot be interpreted.

    Raised to the caller: it is a bad job spec, found before any acquisition tool runs.
    """


__all__ = ["JobError", "JobSpecError", "SourceError", "SourceSpecError"]
