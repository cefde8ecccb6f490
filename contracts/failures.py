"""Which activity errors no retry can fix, recognised wherever they were raised.

An activity's exception reaches Temporal as a failure with a type name and a
``non_retryable`` flag; Temporal retries it (up to the activity's bound,
``workflows.temporal_config.ACTIVITY_LIMITS``) unless the flag is set or the workflow's
retry policy names the type exactly. Matching names exactly misses the errors that matter
most in practice: an ``InvalidArtifact`` raised inside a pydantic validator reaches the
activity as a ``ValidationError``; a ``PermissionError`` is re-raised as ``RuntimeError(...)
from exc``; a read-only file system or a full disk is a plain ``OSError`` whose ``errno``
says what happened. ``permanent_cause`` therefore looks at the whole chain: the exception,
its explicit ``__cause__`` or — unless suppressed with ``from None`` — its ``__context__``,
the members of an exception group, and the exceptions a pydantic ``ValidationError``
wraps. ``classify`` turns an exception whose chain holds a permanent error into an
``ApplicationError`` with ``non_retryable=True`` whose ``type`` names the permanent class,
and a one-line message (``activities.error_classes`` does that for every activity on the
worker and in its helper processes; ``activities.error_redaction`` then redacts the
message).

What is permanent:

- ``PERMANENT_ERRORS``: classes every instance of which (subclasses included) is permanent
  — invalid input and validation (``ValidationError``, ``JobSpecError``,
  ``InvalidArtifact``, ``RequestError``, ``PolicyError``, ``SourceSpecError``,
  ``ProviderInputError``, ``SignatureError``), integrity and scope (``IntegrityError``,
  ``ScopeDenied``, ``SealedConflict``/``RevisionConflict``), refusals (``PathRefused``,
  ``PublishRefused``, ``UnpinnedSource``, ``ProviderConfigError``, ``ProviderUnavailable``),
  the file system's permanent answers (``PermissionError``, ``IsADirectoryError``,
  ``NotADirectoryError``) and encoding (``UnicodeError``).
- ``PERMANENT_ERRNOS``: an ``OSError`` of another class whose ``errno`` is one of these —
  permission (``EACCES``, ``EPERM``), a read-only file system (``EROFS``), no space or quota
  left (``ENOSPC``, ``EDQUOT``), a file too large (``EFBIG``), a directory where a file was
  meant or the reverse (``EISDIR``, ``ENOTDIR``), a name too long (``ENAMETOOLONG``) or a
  symbolic link loop (``ELOOP``). Its failure type stays ``OSError``; the flag carries the
  decision.
- an ``ApplicationError`` raised with ``non_retryable=True`` (a provider's rejected request,
  ``ProviderCallError(retryable=False)``, and the contract errors above).

A ``ProviderCallError`` that says it is retryable (HTTP 429/5xx) is left retryable whatever
its chain holds: the provider decided, and the model call's bound
(``model.max_attempts``) caps the attempts, each of which may be billed. Everything else —
a database that is down, a dead helper process, a timeout, a bug — is retried up to its
activity's bound and then stops the job for an operator (``needs_operator``).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator

import pydantic
from temporalio.exceptions import ApplicationError

from artifacts.errors import (
    IntegrityError,
    InvalidArtifact,
    RevisionConflict,
    ScopeDenied,
    SealedConflict,
)
from context.errors import PolicyError, RequestError, ToolHistoryError
from contracts.errors import (
    CarriedStateMismatch,
    ForkRefused,
    JobIdReused,
    JobSpecError,
    PathOutsideRoots,
    PathOutsideTenantRoots,
    PathRefused,
    ProviderCallError,
    ProviderConfigError,
    ProviderInputError,
    ProviderUnavailable,
    PublishRefused,
    RepositoryRefused,
    ReviewerNotRegistered,
    SourceSpecError,
    UnknownSourceKind,
    UnpinnedSource,
    WebAddressRefused,
    WebLimitExceeded,
    WebUrlRefused,
)
from contracts.mcp_servers import McpGrantRefused
from contracts.model_endpoints import ModelEndpointRefused
from contracts.names import NameRefused
from contracts.signing import SignatureError

__all__ = [
    "MAX_MESSAGE_CHARS",
    "PERMANENT_ERRNOS",
    "PERMANENT_ERRORS",
    "classify",
    "permanent_cause",
    "short_message",
]

#: Classes whose every instance no retry can fix (subclasses included). The workflow's
#: retry policy names them too (``workflows.temporal_config``), for a failure that reaches
#: it without the flag; keep the order stable (history records the list).
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    JobSpecError,
    PublishRefused,
    ScopeDenied,
    InvalidArtifact,
    IntegrityError,
    RequestError,
    PolicyError,
    SourceSpecError,
    ProviderConfigError,
    ProviderInputError,
    SealedConflict,
    RevisionConflict,
    UnpinnedSource,
    PathRefused,
    PathOutsideRoots,
    # the classes below were retried (forever, before the activities had bounds) although
    # no retry can change their outcome
    pydantic.ValidationError,
    ToolHistoryError,
    ProviderUnavailable,
    SignatureError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
    UnicodeError,
    UnicodeEncodeError,
    UnicodeDecodeError,
    # appended, in the order they were added: a path or repository outside the roots,
    # another run's job id or carried state, a key the registry does not hold
    RepositoryRefused,
    PathOutsideTenantRoots,
    JobIdReused,
    CarriedStateMismatch,
    ReviewerNotRegistered,
    NameRefused,
    # a live web page refused by the fetch rules (SECURITY.md, "Live web pages")
    WebUrlRefused,
    WebAddressRefused,
    WebLimitExceeded,
    # a job's MCP grant naming what the operator did not define (docs/mcp.md)
    McpGrantRefused,
    # a model.base_url off the operator's endpoint list (docs/configuration.md)
    ModelEndpointRefused,
    # a source kind with no registered reader (docs/architecture.md#source-kinds-and-research-tools)
    UnknownSourceKind,
    # a fork that may not start (docs/architecture.md#forking-a-job)
    ForkRefused,
)

#: ``OSError`` numbers no retry can fix (see the module docstring).
PERMANENT_ERRNOS: frozenset[int] = frozenset({
    errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG,
    errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP,
})

#: a classified failure's message is cut to this many characters (it travels in history
#: and into ``needs_operator: <reason>``)
MAX_MESSAGE_CHARS = 1000
#: how deep ``permanent_cause`` follows a chain (a cycle or a pathological chain ends here)
_MAX_DEPTH = 32


def _chain(exc: BaseException, depth: int = 0) -> Iterator[BaseException]:
    """``exc`` and what it was raised from, as Python would print it, groups expanded."""
    if depth > _MAX_DEPTH:
        return
    yield exc
    if isinstance(exc, BaseExceptionGroup):
        for member in exc.exceptions:
            yield from _chain(member, depth + 1)
    if isinstance(exc, pydantic.ValidationError):
        for error in exc.errors(include_url=False, include_input=False):
            wrapped = (error.get("ctx") or {}).get("error")
            if isinstance(wrapped, BaseException):
                yield from _chain(wrapped, depth + 1)
    if exc.__cause__ is not None:
        yield from _chain(exc.__cause__, depth + 1)
    elif exc.__context__ is not None and not exc.__suppress_context__:
        yield from _chain(exc.__context__, depth + 1)


def _is_permanent(exc: BaseException) -> bool:
    if isinstance(exc, ApplicationError) and exc.non_retryable:
        return True
    if isinstance(exc, PERMANENT_ERRORS):
        return True
    return isinstance(exc, OSError) and exc.errno in PERMANENT_ERRNOS


def permanent_cause(exc: BaseException) -> BaseException | None:
    """The first error in ``exc``'s chain that no retry can fix, or ``None``.

    A provider's call error that says it is retryable is never overruled.
    """
    if isinstance(exc, ProviderCallError) and exc.retryable:
        return None
    seen: set[int] = set()
    for link in _chain(exc):
        if id(link) in seen:
            continue
        seen.add(id(link))
        if _is_permanent(link):
            return link
    return None


def short_message(exc: BaseException) -> str:
    """``exc``'s message on one line, bounded; a ``ValidationError`` without the input
    values pydantic quotes (they may be file content)."""
    if isinstance(exc, pydantic.ValidationError):
        problems = exc.errors(include_url=False, include_input=False)
        parts = [f"{'.'.join(str(p) for p in e['loc']) or exc.title}: {e['msg']}"
                 for e in problems[:3]]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        text = f"{len(problems)} validation error(s) for {exc.title}: " + "; ".join(parts) + more
    elif isinstance(exc, ApplicationError):
        text = exc.message
    else:
        text = str(exc)
    text = " ".join(text.split()) or type(exc).__name__
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS - 1] + "…"


def _type_name(exc: BaseException) -> str:
    if isinstance(exc, ApplicationError) and exc.type:
        return exc.type
    return type(exc).__name__


def classify(exc: BaseException) -> ApplicationError | None:
    """``exc`` as a non-retryable ``ApplicationError`` if its chain holds a permanent
    error (type: that error's class; message: ``exc``'s, plus the permanent error's when
    it is a cause), or ``None`` when a retry may help."""
    permanent = permanent_cause(exc)
    if permanent is None:
        return None
    if permanent is exc and isinstance(exc, ApplicationError):
        return None if exc.non_retryable else ApplicationError(
            short_message(exc), type=_type_name(exc), non_retryable=True)
    message = short_message(exc)
    if permanent is not exc:
        message = f"{message} ({_type_name(permanent)}: {short_message(permanent)})"
        message = (message if len(message) <= MAX_MESSAGE_CHARS
                   else message[:MAX_MESSAGE_CHARS - 1] + "…")
    failure = ApplicationError(message, type=_type_name(permanent), non_retryable=True)
    return failure
