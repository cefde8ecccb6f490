"""The ``gated-dump`` baseline: the engine's hard gates, then a dump
(docs/context-engine.md#baselines).

What an agent gets from safe admission alone, without ranking. Every candidate, in the
order the case lists it, meets the engine's own seven hard gates — ``GateRunner`` from
``context.admission.gates``, built from the very request the ``pressroom`` strategy hands
the engine (``strategy.build_request``: the case policy with its overrides, ``as_of``,
clearance, principal and request scope, required revisions), so nothing about a gate is
re-implemented here. A candidate that fails is excluded with the engine's reason and
gate. What passes is packed in candidate order until the first block that overflows the
budget; that one and every later passer are left out (``budget_evicted``), exactly as
``dump-all`` packs.

No ranking, no supersession, no topic coverage or ``not_required`` filter, no excerpts or
compaction, no tool-history repair (the history is replayed verbatim like ``dump-all``).
The only transform is the one a gate itself makes: a secret the security gate redacts is
packed as the gate's redacted copy (and a copy the redactor could not clean is excluded
``security_rejected``, as the engine's gate stage does).

Lab trust is whatever ``mapping`` makes of it and the gates decide on that, as for the
``pressroom`` strategy: a lab-``untrusted`` source is ``unvetted_external_data``, which the
trust-role gate refuses under the shipped policies
(docs/context-engine.md#untrusted-lab-sources). Items are the ones the engine gets (read at
the case's ``as_of``).
"""

from __future__ import annotations

from context import ContextPolicy, ExclusionReason, Gate, GateRunner
from evals.context_lab.dataset import LabCase, LabSource
from evals.context_lab.mapping import source_to_item
from evals.context_lab.naive_packet import Packer, naive_packet
from evals.context_lab.packet import Packet
from evals.context_lab.strategy import build_request, case_policy

STRATEGY = "gated-dump"


def gate_runner(case: LabCase, sources: dict[str, LabSource], *, budget: int,
                policy: ContextPolicy) -> GateRunner:
    """The engine's gates for the request the ``pressroom`` strategy would make."""
    request = build_request(case, sources, budget=budget, policy=policy)
    return GateRunner(policy=request.policy, as_of=request.as_of,
                      clearance=request.principal.clearance,
                      principal_scope=request.principal.scope, request_scope=request.scope,
                      required_revisions=dict(request.required_revisions))


def run_gated_dump(case: LabCase, sources: dict[str, LabSource], *, budget: int,
                   policy: ContextPolicy, cases_path: str = "cases") -> Packet:
    used_policy = case_policy(case, policy, cases_path)
    runner = gate_runner(case, sources, budget=budget, policy=used_policy)
    packer = Packer(budget)
    overflowed = False
    for sid in case.candidate_source_ids:
        outcome = runner.run(source_to_item(sources[sid], used_policy, as_of=case.as_of))
        if not outcome.passed:
            assert outcome.reason is not None and outcome.failed_gate is not None
            packer.exclude(sid, outcome.reason.value, outcome.detail,
                           gate=outcome.failed_gate.value)
            continue
        if (outcome.redaction is not None
                and runner.detector.scan_secrets(outcome.item.content) is not None):
            packer.exclude(sid, ExclusionReason.SECURITY_REJECTED.value,
                           "redaction left secret material behind", gate=Gate.SECURITY.value)
            continue
        if overflowed:
            packer.exclude(sid, "budget_evicted", "after the first overflow")
            continue
        left = packer.left
        tokens = packer.offer(sources[sid], outcome.item)
        if tokens is not None:
            overflowed = True
            packer.exclude(sid, "budget_evicted", f"{tokens} tokens overflow {left} left")
    return naive_packet(case, sources, packer, strategy=STRATEGY)
