"""Every activity error that no retry can fix leaves the worker marked non-retryable.

Temporal retries an activity's failure unless the failure says ``non_retryable`` or its
type name is on the retry policy's list — matched exactly, never a base class or a cause.
So a ``PermissionError`` re-raised as ``RuntimeError(...) from exc``, an ``InvalidArtifact``
that pydantic turned into a ``ValidationError``, or a read-only file system (an ``OSError``
known only by its ``errno``) used to be retried until the activity's bound. This
interceptor asks ``contracts.failures.classify`` about each failed attempt and re-raises a
permanent one as ``ApplicationError(non_retryable=True)`` whose ``type`` names the
permanent class (``PermissionError``, ``ValidationError``, ``OSError`` …) and whose message
is one bounded line. Anything else passes untouched: it is retried up to its activity's
bound (``workflows.temporal_config.ACTIVITY_LIMITS``). Helper processes classify the same
way before a failure crosses back (``activities.offload``).

It sits inside ``activities.error_redaction.RedactingInterceptor`` in the worker's one
interceptor chain (``worker.build_worker``), so the message it builds is redacted on its
way out like every other. Cancellation (a ``BaseException``) passes untouched.
"""

from __future__ import annotations

from typing import Any

from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from contracts.failures import classify

__all__ = ["ClassifyingInterceptor"]


class _ClassifyingInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        except Exception as exc:
            permanent = classify(exc)
            if permanent is None:
                raise
            # the chain is dropped: its messages are in this one, which gets redacted
            raise permanent from None


class ClassifyingInterceptor(Interceptor):
    """Wire after ``RedactingInterceptor``: ``interceptors=[RedactingInterceptor(),
    ClassifyingInterceptor()]`` (the first is the outermost)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ClassifyingInbound(next)
