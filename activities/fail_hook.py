"""Test hook: make a named activity fail with a chosen error, to test bounds and classes.

When the environment variable ``PRESSROOM_TEST_FAIL_AT`` holds ``<activity>:<kind>``
entries (comma-separated; ``<activity>`` is a name from ``activities.registry``), every
attempt of that activity raises the error ``<kind>`` names as soon as it starts
(``runtime.heartbeating`` asks ``fail_point``), before any work — so a test can check how
many attempts each kind of error gets (``workflows.temporal_config.ACTIVITY_LIMITS``,
``contracts.failures``) and that the job then needs an operator. The variable is read at
every attempt: a test that removes it and sends a signed ``retry`` sees the step succeed.
It does nothing when the variable is unset; the worker's settings never read it
(tests/README.md, "Test and benchmark hooks").

Kinds (``FAILURES``): the permanent ones are raised as the code that meets them would
raise them — ``ValidationError`` is a real pydantic error around the store's
``InvalidArtifact`` (a principal named ``ops/alice``), ``UnicodeEncodeError`` a real
encoding of a surrogate-escaped file name, ``WrappedPermissionError`` a ``RuntimeError``
raised ``from`` a ``PermissionError`` — and two retryable ones (``DatabaseUnavailable``,
``ProviderBusy``: an HTTP 503) check the bound.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

import pydantic

import artifacts
from artifacts.errors import DatabaseUnavailable, IntegrityError, InvalidArtifact, ScopeDenied
from contracts.errors import PathRefused, ProviderCallError

__all__ = ["FAILURES", "FAIL_ENV", "PERMANENT_KINDS", "RETRYABLE_KINDS", "fail_point"]

FAIL_ENV = "PRESSROOM_TEST_FAIL_AT"


def _validation_error() -> BaseException:
    try:
        artifacts.Principal(principal_id="ops/alice", tenant="acme", project="docs")
    except pydantic.ValidationError as exc:
        return exc
    raise AssertionError("the store accepted a principal named ops/alice")


def _unicode_error() -> BaseException:
    name = os.fsdecode(b"caf\xe9.md")  # a Latin-1 file name on a UTF-8 file system
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc
    raise AssertionError("a surrogate-escaped name encoded")


def _wrapped_permission_error() -> BaseException:
    outer = RuntimeError("could not write the article")
    outer.__cause__ = PermissionError(errno.EACCES, "Permission denied", "/published/x.md")
    return outer


#: kind → the error an attempt raises
FAILURES: dict[str, Callable[[], BaseException]] = {
    "ValidationError": _validation_error,
    "InvalidArtifact": lambda: InvalidArtifact("principal field 'ops/alice' contains a path "
                                               "separator"),
    "IntegrityError": lambda: IntegrityError("article_draft", "job.draft", 1, "sha256:aa",
                                             "sha256:bb"),
    "ScopeDenied": lambda: ScopeDenied("not visible in this tenant and project"),
    "PathRefused": lambda: PathRefused("destination /published is a file, not a folder"),
    "PermissionError": lambda: PermissionError(errno.EACCES, "Permission denied",
                                               "/published/job"),
    "IsADirectoryError": lambda: IsADirectoryError(errno.EISDIR, "Is a directory",
                                                   "/published/job/job.md"),
    "NotADirectoryError": lambda: NotADirectoryError(errno.ENOTDIR, "Not a directory",
                                                     "/published/job"),
    "ReadOnlyFileSystem": lambda: OSError(errno.EROFS, "Read-only file system", "/published"),
    "NoSpaceLeft": lambda: OSError(errno.ENOSPC, "No space left on device", "/published"),
    "UnicodeEncodeError": _unicode_error,
    "WrappedPermissionError": _wrapped_permission_error,
    "ProviderRejected": lambda: ProviderCallError("HTTP 400: the request was rejected",
                                                  retryable=False),
    # retried up to the activity's bound
    "DatabaseUnavailable": lambda: DatabaseUnavailable("database store.db is locked"),
    "ProviderBusy": lambda: ProviderCallError("HTTP 503: overloaded", retryable=True),
}
RETRYABLE_KINDS = ("DatabaseUnavailable", "ProviderBusy")
PERMANENT_KINDS = tuple(kind for kind in FAILURES if kind not in RETRYABLE_KINDS)


def fail_point(activity_name: str) -> None:
    """Raise the error ``PRESSROOM_TEST_FAIL_AT`` names for ``activity_name``, if any."""
    raw = os.environ.get(FAIL_ENV, "")
    if not raw:
        return
    for entry in raw.split(","):
        name, _, kind = entry.strip().partition(":")
        if name != activity_name:
            continue
        make = FAILURES.get(kind)
        if make is None:
            raise AssertionError(f"{FAIL_ENV}: unknown kind {kind!r}; one of {sorted(FAILURES)}")
        raise make()
