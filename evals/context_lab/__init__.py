"""The context lab: ``pressroom eval context`` (docs/context-engine.md#the-context-eval).

Fixed cases and sources (JSON Lines) are run through four strategies — three baselines
(``dump-all``, ``gated-dump``: the engine's hard gates then a dump, ``top-k``: a naive
term-overlap retriever) and the ``pressroom`` context engine — each reduced to a
``Packet``; ten deterministic graders judge every packet; metrics, a release gate (against
the strongest baseline) and four reports follow, for each topic mode (``labels``: declared
source topics count as coverage; ``content``: coverage has to come from the content).
Modules: ``dataset`` (strict loading), ``mapping`` (lab records → engine items),
``topics`` (the topic modes), ``baseline`` (dump-all), ``baseline_gated``,
``baseline_topk``, ``naive_packet`` (what the baselines share), ``strategy``, ``packet``,
``zones``, ``graders``, ``gate``, ``runner``, ``reports``, ``topic_report`` (the topic
modes in the reports), ``command`` (the CLI body), ``errors``.
"""

from evals.context_lab.dataset import LabCase, LabSource, load_cases, load_sources
from evals.context_lab.errors import DatasetError, LabError, StrategyError
from evals.context_lab.gate import CaseRun, ContextReleaseGate, StrategyMetrics
from evals.context_lab.graders import GRADER_NAMES, GRADERS, Grade, grade_packet
from evals.context_lab.packet import Packet
from evals.context_lab.reports import write_reports
from evals.context_lab.runner import EvalResult, run_context_eval

__all__ = [
    "GRADERS",
    "GRADER_NAMES",
    "CaseRun",
    "ContextReleaseGate",
    "DatasetError",
    "EvalResult",
    "Grade",
    "LabCase",
    "LabError",
    "LabSource",
    "Packet",
    "StrategyError",
    "StrategyMetrics",
    "grade_packet",
    "load_cases",
    "load_sources",
    "run_context_eval",
    "write_reports",
]
