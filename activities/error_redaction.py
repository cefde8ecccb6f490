"""Every activity error leaves the worker with secrets redacted (SECURITY.md, promise 4).

An activity's exception becomes a Temporal failure: its message is stored in workflow
history, shown by ``pressroom status`` when the job fails, and logged. Messages can quote
what they failed on — a database URL with its password, a token in a git error, a line of a
file. The modules that build messages from external content already redact what they know
(``context.admission.security.redact_secrets``); this interceptor is the one place that
catches the rest, on every activity, so a message nobody thought about cannot leak either.

Temporal stores the whole cause chain, not only the top message (each ``__cause__``, and an
``ApplicationError``'s unsuppressed ``__context__``, as ``failure.cause``): a clean
"store write failed" raised ``from`` a driver error quoting the URL would carry the
password into history below it. So the interceptor scans every link Temporal would send.
When any needs redaction it re-raises the chain rebuilt as ``ApplicationError`` objects, each
with its redacted message and its *original* type name — the top one with the original
``non_retryable`` flag and retry delay, so the workflow's retry policy, which names
permanent errors by type (``workflows.temporal_config``), decides exactly as before.
Details are dropped when redaction was needed (they may carry the same text). A chain
longer than ``MAX_CHAIN`` links is always rebuilt, cut there with a ``TruncatedCause`` note
(its tail is never scanned, so it must not be sent). A chain that holds no secret is
re-raised untouched; cancellation passes through untouched. Cost: one secret scan of each
short message in the chain per failed activity attempt.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError, FailureError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from context import redact_secrets

__all__ = ["RedactingInterceptor", "redacted_error"]


#: links of a cause chain scanned and kept; a longer chain is cut (with a note) when rebuilt
MAX_CHAIN = 32


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, FailureError) else str(exc)


def _next_link(exc: BaseException) -> BaseException | None:
    if exc.__cause__ is not None:
        return exc.__cause__
    if isinstance(exc, FailureError) and not exc.__suppress_context__:
        return exc.__context__  # the converter follows the context for these only
    return None


def _chain(exc: BaseException) -> tuple[list[BaseException], bool]:
    """``exc`` and the causes Temporal's failure converter would serialize below it (a
    cycle ends the chain), and whether more links than ``MAX_CHAIN`` were left out."""
    links: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if len(links) == MAX_CHAIN:
            return links, True
        seen.add(id(current))
        links.append(current)
        current = _next_link(current)
    return links, False


def redacted_error(exc: BaseException) -> ApplicationError | None:
    """``exc`` and its cause chain rebuilt as ``ApplicationError`` objects with secrets redacted,
    or ``None`` if no message in the chain holds one."""
    links, cut = _chain(exc)
    messages = [_message(link) for link in links]
    cleaned = [redact_secrets(message) for message in messages]
    if cleaned == messages and not cut:  # a cut chain is rebuilt: its tail went unscanned
        return None
    rebuilt: ApplicationError | None = None
    if cut:
        rebuilt = ApplicationError(f"(causes beyond {MAX_CHAIN} links not kept)",
                                   type="TruncatedCause")
    for link, clean in zip(reversed(links), reversed(cleaned), strict=True):
        if isinstance(link, ApplicationError):
            error = ApplicationError(clean, type=link.type or type(link).__name__,
                                     non_retryable=link.non_retryable,
                                     next_retry_delay=link.next_retry_delay)
        else:
            error = ApplicationError(clean, type=type(link).__name__)
        error.__cause__ = rebuilt
        rebuilt = error
    assert rebuilt is not None
    return rebuilt


class _RedactingInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        except Exception as exc:  # cancellation is a BaseException and passes untouched
            clean = redacted_error(exc)
            if clean is None:
                raise
            raise clean from clean.__cause__  # the rebuilt, redacted chain


class RedactingInterceptor(Interceptor):
    """Wire with ``Worker(..., interceptors=[RedactingInterceptor()])``."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _RedactingInbound(next)
