"""Whether a stored approval's signature holds: one check for the publisher and the console.

``activities.publish`` refuses to publish an approval whose signature does not hold; the
review console's published page (``webconsole``, which imports no activity code) shows a
reader the same verdict on the decision behind a published article. Both read it here, so
what the console calls "signed by alice" is exactly what the publisher accepted.

Only the signature is checked: that the reviewer's key listed in the job's spec signed
exactly this approval of this draft for this destination (and this job's first run).
Nonce and time were checked when the decision was accepted (``contracts.signing``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from contracts.job_spec import JobSpec
from contracts.signing import SignatureError, normalize_name, verify
from contracts.workflow_messages import ReviewInput

__all__ = ["approval_problem"]


def approval_problem(spec: JobSpec, decision: dict[str, Any]) -> str | None:
    """Why the stored ``decision`` (``activities.store_activities.record_review``'s body)
    is not an approval signed by the reviewer it names with that reviewer's listed key;
    ``None`` when it is."""
    reviewer = decision.get("reviewer")
    bound = decision.get("draft") or {}
    try:
        signed = ReviewInput(
            decision="approve", reviewer=reviewer, draft_revision=bound.get("revision"),
            draft_hash=bound.get("content_hash"), destination=decision.get("destination"),
            comments=decision.get("comments") or [], signature=decision.get("signature"),
            first_run_id=decision.get("first_run_id"))
        verify(signed.signature, "review", spec.job_id, signed.signed_body(),
               allowed=spec.review.signers(operators=False))
    except (SignatureError, ValidationError) as exc:
        detail = str(exc) if isinstance(exc, SignatureError) else "malformed signed decision"
        return f"review decision's signature does not hold: {detail}"
    assert signed.signature is not None
    if not isinstance(reviewer, str) or \
            normalize_name(signed.signature.signer) != normalize_name(reviewer):
        return (f"review decision names {reviewer!r} but is signed by "
                f"{signed.signature.signer!r}")
    return None
