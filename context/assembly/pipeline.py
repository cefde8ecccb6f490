"""The pipeline: the one place that knows every stage, builds them and runs them in order.

Each stage is a component of its own stage folder that receives the shared
``AssemblyState`` and what else it needs (the gate runner, the block store, the tool stage),
and never the pipeline: imports run one way, state ← stages ← pipeline ← engine, and no
object points back at the pipeline, so everything an assembly builds is freed by reference
counting when it returns (``tests/context/test_engine.py`` fails if an assembly leaves a
cycle for the collector).

Each stage logs a ``StageEntry`` and may exclude items; no stage re-admits what an earlier
one excluded — every later stage only iterates over ``state.admitted``, which only the gates
fill (docs/context-engine.md#the-pipeline-stage-by-stage).
"""

from __future__ import annotations

from collections.abc import Callable

from context.admission.gates import GateRunner
from context.admission.stage import GateStage, record_acquisitions
from context.assembly.state import AssemblyState, Blocked
from context.budget.stage import BudgetStage
from context.limits.block_store import BlockStore
from context.limits.stage import apply_source_limits
from context.manifest import StageEntry
from context.ranking.relevance import TermScan, decision_terms, topic_terms
from context.ranking.stage import rank
from context.request import AssemblyRequest
from context.seal.finish import Finisher, Outcome
from context.tokens import TokenCounter
from context.tools.stage import ToolStage

__all__ = ["Pipeline"]


class Pipeline:
    """One assembly: ``run()`` returns the sealed ``Outcome`` (ready or blocked)."""

    def __init__(self, request: AssemblyRequest, counter: TokenCounter) -> None:
        self.state = state = AssemblyState(request, counter)
        runner = GateRunner(
            policy=state.policy,
            as_of=request.as_of,
            clearance=request.principal.clearance,
            principal_scope=request.principal.scope,
            request_scope=request.scope,
            required_revisions=request.required_revisions,
        )
        # coverage and relevance: one scan per item answers both
        term_scan = TermScan(
            [term for terms in topic_terms(request.required_topics) for term in terms]
            + list(decision_terms(request.question, request.decision))
        )
        self.tools = tools = ToolStage(state, runner)
        blocks = BlockStore(state)
        budget = BudgetStage(state, tools, blocks, term_scan)
        self.finisher = Finisher(state, tools, blocks, budget)
        # The stages in order. The closures capture locals, never ``self``: no stage can
        # reach the pipeline, and the pipeline's objects form no cycle.
        self.stages: tuple[tuple[str, Callable[[], None]], ...] = (
            ("acquisition", lambda: record_acquisitions(state)),
            ("hard_gates", GateStage(state, runner).run),
            ("ranking", lambda: rank(state, term_scan)),
            ("structure", tools.run),
            ("source_limits", lambda: apply_source_limits(state, blocks)),
            ("budget", budget.run),
        )

    @property
    def current_stage(self) -> str:
        """The stage running (or that failed): named in an ``InvariantViolation``."""
        return self.state.current_stage

    def run(self) -> Outcome:
        state = self.state
        try:
            for name, run_stage in self.stages:
                state.current_stage = name
                run_stage()
            state.current_stage = "render"
            return self.finisher.ready()
        except Blocked as blocked:
            state.stages.append(
                StageEntry(stage=state.current_stage, status="blocked", detail=blocked.detail)
            )
            return self.finisher.blocked(blocked.reason, blocked.detail)
