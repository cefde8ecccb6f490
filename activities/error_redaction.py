"""Every activity error leaves the worker with secrets redacted (SECURITY.md, promise 4).

An activity's exception becomes a Temporal failure: its message is stored in workflow
history, shown by ``pressroom status`` when the job fails, and logged. Messages can quote
what they failed on — a database URL with its password, a token in a git error, a line of a
file. The modules that build messages from external content already redact what they know
(``context.admission.security.redact_secrets``); this interceptor is the one place that
catches the rest, on every activity, so a message nobody thought about cannot leak either.

It re-raises an ``ApplicationError`` carrying the redacted message and the *original* error
type name, with the original ``non_retryable`` flag, so the workflow's retry policy — which
names permanent errors by type (``workflows.temporal_config``) — decides exactly as before.
An error whose message holds no secret is re-raised untouched. Details and the cause chain
are dropped when redaction was needed: they may carry the same text. Cancellation passes
through untouched. Cost: one secret scan of a short message per failed activity attempt.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from context.admission.security import redact_secrets

__all__ = ["RedactingInterceptor", "redacted_error"]


def redacted_error(exc: BaseException) -> ApplicationError | None:
    """``exc`` as an ``ApplicationError`` with its secrets redacted, or ``None`` if its
    message holds none."""
    message = exc.message if isinstance(exc, ApplicationError) else str(exc)
    clean = redact_secrets(message)
    if clean == message:
        return None
    if isinstance(exc, ApplicationError):
        return ApplicationError(clean, type=exc.type or type(exc).__name__,
                                non_retryable=exc.non_retryable,
                                next_retry_delay=exc.next_retry_delay)
    return ApplicationError(clean, type=type(exc).__name__)


class _RedactingInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        except Exception as exc:  # cancellation is a BaseException and passes untouched
            clean = redacted_error(exc)
            if clean is None:
                raise
            raise clean from None


class RedactingInterceptor(Interceptor):
    """Wire with ``Worker(..., interceptors=[RedactingInterceptor()])``."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _RedactingInbound(next)
