"""The worker's registered-reviewers-only mode: only keys the operator registered may review.

Whoever can start a job writes its spec, and so chooses the keys that may approve, resolve
and cancel it (SECURITY.md, "Who is trusted with what"); the worker's registry check at
publish (``activities.publish.check_registry``) only stops a *registered* name from being
listed with another key. With ``--registered-reviewers-only``
(``settings.Settings.registered_reviewers_only``) every reviewer and operator a job lists
must be in the operator's registry (``ActivityRuntime.reviewers_dir``, the worker's
``Settings.reviewers_dir``: ``$PRESSROOM_HOME/reviewers/<name>.pub``, read through
``contracts.reviewer_registry``) with exactly
the key the spec pins: ``check_spec_reviewers`` runs where the spec is stored
(``store_job_spec``, at start and after each ``resolve``), before anything reads a source,
and publishing refuses a decision whose signer's registry entry is missing
(``check_registry(..., required=True)``). A refusal is ``ReviewerNotRegistered``, one line
naming the person and the registry, never retried.
"""

from __future__ import annotations

from pathlib import Path

from contracts import reviewer_registry
from contracts.errors import ReviewerNotRegistered
from contracts.job_spec import JobSpec

__all__ = ["check_spec_reviewers", "registered_key"]


def registered_key(registry: Path, name: str) -> str | None:
    """The public key ``registry`` holds for ``name`` (``None``: no entry);
    ``ReviewerNotRegistered`` when the entry cannot be read (the message names the file,
    never its content; a symbolic link is refused: ``contracts.reviewer_registry``)."""
    try:
        return reviewer_registry.read_entry(registry, name)
    except reviewer_registry.RegistryError as exc:
        raise ReviewerNotRegistered(str(exc)) from None


def check_spec_reviewers(spec: JobSpec, registry: Path) -> None:
    """Refuse ``spec`` unless every reviewer and operator it lists is registered in
    ``registry`` with the key the spec pins for them."""
    for role, people in (("reviewer", spec.review.reviewers),
                         ("operator", spec.review.operators)):
        for person in people:
            key = registered_key(registry, person.name)
            if key is None:
                raise ReviewerNotRegistered(
                    f"job {spec.job_id}: {role} {person.name!r} is not in the reviewer "
                    f"registry {registry}; this worker accepts only registered reviewers "
                    "(--registered-reviewers-only)")
            if person.public_key != key:
                raise ReviewerNotRegistered(
                    f"job {spec.job_id}: {role} {person.name!r} is pinned to a key other "
                    f"than the one registered in {registry}; this worker accepts only "
                    "registered reviewers (--registered-reviewers-only)")
