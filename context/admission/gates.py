"""The seven hard gates, run in ``GATE_ORDER`` on every candidate before any ranking.

A gate either passes or fails; the first failure ends evaluation (later gates are recorded
``not_evaluated``) and maps to the exclusion reasons (docs/context-engine.md#exclusion-reasons):

==========================  =====================================================
gate                        failure reason
==========================  =====================================================
permission                  ``permission_denied`` (clearance < security class, or
                            the principal's scope does not reach the item)
scope                       ``hard_gate_rejected`` (tenant / project / task mismatch)
required_revision           ``stale_revision`` (the task holds another revision)
freshness                   ``expired`` | ``unverifiable`` | ``hard_gate_rejected``
                            for ``refresh_required`` (with a refresh condition)
integrity                   ``hard_gate_rejected`` (hash mismatch, a stored revision
                            whose attestation is ``invalid``, incomplete code ref,
                            broken lineage)
trust_role_compatibility    ``hard_gate_rejected`` (role not allowed for the
                            item's effective trust)
security_policy_compliance  ``security_rejected`` (secret under ``deny``,
                            cross-scope origin, instruction text under ``deny``)
==========================  =====================================================

Choices the design leaves open:

* Scope visibility: an item scoped to the whole project (``task=None``) is visible to
  every task of that project; a task-scoped item only to that task. The principal's own
  scope is checked by the permission gate with the same rule.
* Required revision: ``required_revisions`` is keyed by canonical key; for repository
  code the key ``repo:<name>`` pins the commit, compared with ``source_ref.commit``.
  The revision a retrieval *claims* is never trusted over the one the task holds.
* Freshness: an explicit ``valid_until`` decides alone (``as_of == valid_until`` is still
  valid); otherwise the policy's per-source-type ages apply to ``observed_at`` — when the
  content was read, an observation of live state that may have changed since — and never
  to ``source_date`` (the document's own date: an old document read today is a fresh
  observation); a naive or future ``observed_at`` is ``unverifiable``. A state the
  source itself claims is kept when it is worse than the computed one.
* A pinned revision does not age: when the task holds the item's revision (its canonical
  key in ``required_revisions``, or for an item at a commit the ``repo:<name>`` pin), the
  age rule is waived — refreshing an immutable revision cannot change it, and it is the
  only revision the task admits. The waiver is recorded (``freshness_waiver`` of the
  candidate entry). A pin waives the age rule only: a ``valid_until`` the source states,
  or a worse state it claims, still applies.
* Integrity: the engine holds no keys. The runtime checks the signature of every stored
  revision it reads (``activities.candidates``) and puts its verdict on the item
  (``ContextItem.attestation``); the gate refuses ``invalid`` — a revision changed,
  forged or stripped of its signature by someone who could write the database but lacks
  the attestation key — and admits ``verified`` and ``unsigned`` (no key configured:
  only the bare content hash was checkable).
* Effective trust is ``lowest(claimed, policy ceiling for the source type)``.
* Secrets are redacted (a new derived item, recorded as a transform) or denied per policy;
  redaction happens inside the security gate so nothing later ever sees the secret.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from context.admission.security import detector_for
from context.admitted import GateOutcome, Redaction
from context.items import ContextItem, LineageNode, ScopeRef, scope_matches, sha256_text, visible
from context.policy import ContextPolicy
from context.vocabulary import (
    GATE_ORDER,
    SECURITY_LEVEL,
    AttestationStatus,
    ExclusionReason,
    Freshness,
    Gate,
    GateResult,
    SecurityClass,
    SourceType,
    Trust,
    lowest_trust,
)

_FRESHNESS_RANK = {
    Freshness.VALID: 0,
    Freshness.REFRESH_REQUIRED: 1,
    Freshness.UNVERIFIABLE: 2,
    Freshness.EXPIRED: 3,
}
# Text from these trust labels is instruction by design; everything else is data and gets
# scanned for instruction-like phrases.
_AUTHORITATIVE = (Trust.CONTROL_AUTHORITY, Trust.TASK_AUTHORITY, Trust.TRUSTED_STATE)


def pinned_revision(item: ContextItem, required_revisions: dict[str, str]) -> str | None:
    """Why ``item`` is a pinned revision, or ``None``: the task holds exactly this revision
    of its canonical key, or the commit it is at is the one ``repo:<name>`` pins."""
    held = required_revisions.get(item.key)
    if held is not None and item.revision == held:
        return f"revision {held!r} of {item.key!r} is held by the task"
    repo, commit = item.source_ref.repo, item.source_ref.commit
    if repo is not None and commit is not None:
        pin = required_revisions.get(f"repo:{repo}")
        if pin is not None and commit == pin:
            return f"commit {pin!r} of repo {repo!r} is pinned by the task"
    return None


def freshness_state(item: ContextItem, as_of: datetime, policy: ContextPolicy, *,
                    pinned: str | None = None) -> tuple[Freshness, str]:
    """Freshness of ``item`` at ``as_of`` and a short explanation; ``pinned`` (from
    :func:`pinned_revision`) waives the age rule."""
    state, why, _ = _freshness(item, as_of, policy, pinned)
    return state, why


def _freshness(item: ContextItem, as_of: datetime, policy: ContextPolicy,
               pinned: str | None) -> tuple[Freshness, str, bool]:
    """(state, explanation, whether a pin waived the age rule)."""
    computed, why, waived = _computed_freshness(item, as_of, policy, pinned)
    claimed = item.freshness
    if claimed is not None and _FRESHNESS_RANK[claimed] > _FRESHNESS_RANK[computed]:
        return claimed, f"source claims {claimed.value}", False
    return computed, why, waived


def freshness_key(item: ContextItem, as_of: datetime, policy: ContextPolicy, *,
                  pinned: str | None = None) -> tuple[Freshness, str]:
    """What of ``as_of`` a gate outcome depends on: the freshness state, plus its
    explanation unless the state is ``valid`` (a valid item's outcome never mentions it).

    Freshness is the only gate that reads the clock, so outcomes memoized under this key
    serve every later step of a job over the same items (each step has its own ``as_of``).
    A pinned revision's waiver does not depend on ``as_of`` (its key never changes).
    """
    state, why = freshness_state(item, as_of, policy, pinned=pinned)
    return state, "" if state is Freshness.VALID else why


def _computed_freshness(item: ContextItem, as_of: datetime, policy: ContextPolicy,
                        pinned: str | None) -> tuple[Freshness, str, bool]:
    if item.valid_until is not None:
        if item.valid_until.tzinfo is None:
            return Freshness.UNVERIFIABLE, "valid_until has no timezone", False
        if as_of > item.valid_until:
            return (Freshness.EXPIRED, f"valid_until {item.valid_until.isoformat()} < as_of",
                    False)
        return Freshness.VALID, f"valid until {item.valid_until.isoformat()}", False
    rule = policy.freshness.max_age.get(item.source_type)
    if rule is None:
        return Freshness.VALID, f"{item.source_type.value} does not age under this policy", False
    if pinned is not None:
        return Freshness.VALID, f"age check waived: {pinned}", True
    state, why = _observation_age(item, as_of, rule.refresh_after, rule.expire_after)
    return state, why, False


def _observation_age(item: ContextItem, as_of: datetime, refresh_after: int,
                     expire_after: int) -> tuple[Freshness, str]:
    """The age rule: how long ago the content was read (``observed_at``), never the
    source's own date."""
    if item.observed_at is None:
        return Freshness.UNVERIFIABLE, "no observed_at and no valid_until"
    if item.observed_at.tzinfo is None:
        return Freshness.UNVERIFIABLE, "observed_at has no timezone"
    age = (as_of - item.observed_at).total_seconds()
    if age < 0:
        return Freshness.UNVERIFIABLE, "observed_at lies after as_of"
    if age > expire_after:
        return Freshness.EXPIRED, f"observed {int(age)}s ago > expire_after {expire_after}s"
    if age > refresh_after:
        return (Freshness.REFRESH_REQUIRED,
                f"observed {int(age)}s ago > refresh_after {refresh_after}s")
    return Freshness.VALID, f"observed {int(age)}s ago, within {refresh_after}s"


def effective_trust(item: ContextItem, policy: ContextPolicy) -> Trust:
    return lowest_trust([item.trust, policy.trust.default_by_source[item.source_type]])


def _lineage_ok(lineage: tuple[LineageNode, ...]) -> str | None:
    seen: set[str] = set()
    for node in lineage:
        if node.node_id in seen:
            return f"lineage node {node.node_id!r} appears twice"
        missing = [i for i in node.input_node_ids if i not in seen]
        if missing:
            return f"lineage node {node.node_id!r} names unknown earlier inputs {missing}"
        seen.add(node.node_id)
    return None


class GateRunner:
    """Runs the gates for one request's principal, scope, revisions, clock and policy."""

    def __init__(
        self,
        *,
        policy: ContextPolicy,
        as_of: datetime,
        clearance: SecurityClass,
        principal_scope: ScopeRef,
        request_scope: ScopeRef,
        required_revisions: dict[str, str],
    ) -> None:
        self.policy = policy
        self.as_of = as_of
        self.clearance = clearance
        self.principal_scope = principal_scope
        self.request_scope = request_scope
        self.required_revisions = required_revisions
        sec = policy.security
        self.detector = detector_for(sec.extra_secret_patterns, sec.extra_instruction_patterns)

    def run(self, item: ContextItem) -> GateOutcome:
        out = GateOutcome(
            item=item,
            results=dict.fromkeys(GATE_ORDER, GateResult.NOT_EVALUATED),
            effective_trust=effective_trust(item, self.policy),
        )
        for gate in GATE_ORDER:
            failure = _CHECKS[gate](self, out)
            if failure is not None:
                out.results[gate] = GateResult.FAILED
                out.failed_gate, (out.reason, out.detail) = gate, failure
                if gate is not Gate.SECURITY:
                    skipped = f"not_evaluated_after_{gate.value}_failure"
                    out.security_assessment = {"status": skipped}
                return out
            out.results[gate] = GateResult.PASSED
        return out

    def _permission(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        item = out.item
        if SECURITY_LEVEL[item.security_class] > SECURITY_LEVEL[self.clearance]:
            return (
                ExclusionReason.PERMISSION_DENIED,
                f"security class {item.security_class.value} exceeds clearance "
                f"{self.clearance.value}",
            )
        if not visible(self.principal_scope, item.scope):
            return (
                ExclusionReason.PERMISSION_DENIED,
                f"principal scope {self.principal_scope} does not reach {item.scope}",
            )
        return None

    def _scope(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        if not scope_matches(self.request_scope, out.item.scope):
            return (
                ExclusionReason.HARD_GATE_REJECTED,
                f"item scope {out.item.scope} is outside request scope {self.request_scope}",
            )
        return None

    def _revision(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        item = out.item
        held = self.required_revisions.get(item.key)
        if held is not None and item.revision != held:
            out.refresh_condition = f"load_required_revision_{held}"
            return (
                ExclusionReason.STALE_REVISION,
                f"{item.key}: item has revision {item.revision!r}, task holds {held!r}",
            )
        repo = item.source_ref.repo
        if repo is not None and item.source_type is SourceType.REPOSITORY_SOURCE:
            pinned = self.required_revisions.get(f"repo:{repo}")
            if pinned is not None and item.source_ref.commit != pinned:
                out.refresh_condition = f"load_{repo}_at_commit_{pinned}"
                return (
                    ExclusionReason.STALE_REVISION,
                    f"repo {repo}: item is at commit {item.source_ref.commit!r}, task pins "
                    f"{pinned!r}",
                )
        return None

    def _freshness(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        pinned = pinned_revision(out.item, self.required_revisions)
        state, why, waived = _freshness(out.item, self.as_of, self.policy, pinned)
        out.freshness = state
        if waived:
            out.freshness_waiver = why
        rules = self.policy.freshness
        if state is Freshness.EXPIRED:
            out.refresh_condition = "refresh_source_or_drop"
            return ExclusionReason.EXPIRED, why
        if state is Freshness.UNVERIFIABLE and rules.on_unverifiable == "reject":
            out.refresh_condition = "provide_observed_at_or_valid_until"
            return ExclusionReason.UNVERIFIABLE, why
        if state is Freshness.REFRESH_REQUIRED and rules.on_refresh_required == "reject":
            out.refresh_condition = "fetch_authoritative_source_before_admission"
            return ExclusionReason.HARD_GATE_REJECTED, f"refresh_required: {why}"
        return None

    def _integrity(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        item = out.item
        actual = sha256_text(item.content)
        if actual != item.content_hash:
            return (
                ExclusionReason.HARD_GATE_REJECTED,
                f"content hash mismatch: claimed {item.content_hash}, content hashes to {actual}",
            )
        attested = item.attestation
        if attested is not None and attested.status is AttestationStatus.INVALID:
            return (
                ExclusionReason.HARD_GATE_REJECTED,
                f"attestation invalid: {attested.detail or 'the stored revision is not signed'}",
            )
        is_code = item.source_type is SourceType.REPOSITORY_SOURCE
        if is_code and not item.source_ref.is_complete_code_ref:
            return (
                ExclusionReason.HARD_GATE_REJECTED,
                "code evidence needs repo, commit, path and line range",
            )
        broken = _lineage_ok(item.source_lineage)
        if broken:
            return ExclusionReason.HARD_GATE_REJECTED, broken
        return None

    def _trust_role(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        allowed = self.policy.role_limits[out.effective_trust]
        if out.item.intended_role not in allowed:
            return (
                ExclusionReason.HARD_GATE_REJECTED,
                f"role {out.item.intended_role.value} not allowed for trust "
                f"{out.effective_trust.value} (allowed: {[r.value for r in allowed]})",
            )
        return None

    def _security(self, out: GateOutcome) -> tuple[ExclusionReason, str] | None:
        item, sec = out.item, self.policy.security
        assessment = {
            "cross_scope_check": "not_evaluated",
            "secret_handling": "not_evaluated",
            "external_instruction_isolation": "not_evaluated",
        }
        out.security_assessment = assessment
        foreign = [str(s) for s in item.origin_scopes if not scope_matches(self.request_scope, s)]
        if foreign:
            assessment["cross_scope_check"] = "failed"
            return ExclusionReason.SECURITY_REJECTED, f"derived from other scopes {foreign}"
        assessment["cross_scope_check"] = "passed"
        secrets, flags = self.detector.assess(item.content_hash, item.content)
        if secrets is not None:
            # what was found, never the value (the location is this entry's item id)
            assessment["secret_kinds"] = ",".join(secrets.kinds)
            if sec.secret_material == "deny":
                assessment["secret_handling"] = "failed"
                return (
                    ExclusionReason.SECURITY_REJECTED,
                    f"secret material {list(secrets.kinds)} under policy deny",
                )
            assessment["secret_handling"] = "redacted"
            out.redaction = Redaction(original=item, kinds=secrets.kinds)
            out.item = redacted_copy(item, secrets.redacted)
            flags = self.detector.instruction_matches(secrets.redacted)
        else:
            assessment["secret_handling"] = "passed"
        if flags and out.effective_trust not in _AUTHORITATIVE:
            out.instruction_flags = flags
            if sec.external_instruction_text == "deny":
                assessment["external_instruction_isolation"] = "failed"
                return (
                    ExclusionReason.SECURITY_REJECTED,
                    f"instruction-like text in untrusted data under policy deny: {list(flags)}",
                )
            assessment["external_instruction_isolation"] = "flagged"
        else:
            assessment["external_instruction_isolation"] = "passed"
        return None


#: each gate's check; ``GateRunner.run`` runs them in ``GATE_ORDER`` (a gate added to
#: ``Gate`` without its check here fails at import)
_CHECKS: dict[Gate, Callable[[GateRunner, GateOutcome], tuple[ExclusionReason, str] | None]] = {
    Gate.PERMISSION: GateRunner._permission,
    Gate.SCOPE: GateRunner._scope,
    Gate.REQUIRED_REVISION: GateRunner._revision,
    Gate.FRESHNESS: GateRunner._freshness,
    Gate.INTEGRITY: GateRunner._integrity,
    Gate.TRUST_ROLE: GateRunner._trust_role,
    Gate.SECURITY: GateRunner._security,
}
assert tuple(_CHECKS) == GATE_ORDER, "one check per context.vocabulary.Gate, in its order"


def redacted_copy(item: ContextItem, content: str) -> ContextItem:
    """A derived item with secrets replaced; the lineage records the redaction step."""
    new_hash = sha256_text(content)
    base = item.source_lineage or (
        LineageNode(node_id=item.item_id, type=item.source_type.value, digest=item.content_hash),
    )
    node = LineageNode(
        node_id=f"{item.item_id}#redacted",
        type="redact",
        input_node_ids=(base[-1].node_id,),
        digest=new_hash,
    )
    return item.model_copy(
        update={"content": content, "content_hash": new_hash, "source_lineage": (*base, node)}
    )
