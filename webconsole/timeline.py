"""A job's stage timeline from its Temporal history: what ran, when, and how it ended.

The history is the record of truth for what a job did (it survives worker crashes and
continue-as-new keeps a checkpoint of it), so the console reads the stages from it instead
of keeping a log of its own. Each activity becomes one ``Step``; its stage is taken from
the activity's name (``write_plan`` → plan, ``draft`` → draft …) or, for the two that serve
every stage (``assemble_context``, ``write_checkpoint``), from the ``stage`` field of its
own input. Updates (review decisions) and signals are steps of the review stage. Stages
are then the spans of their steps in order of first appearance; a research loop's turns
are numbered by its ``decide`` steps.

Pure over already-decoded events (``webconsole.backend`` decodes them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from contracts.steps import ACTIVITY_STAGE, STAGES

_STAGE_OF: dict[str, str] = {name: stage for name, stage in ACTIVITY_STAGE.items()}
#: the stages a timeline may show, in the order a job passes through them
STAGE_ORDER = tuple(s for s in STAGES if s != "done")


@dataclass
class Step:
    """One activity (or update/signal) of the history."""

    name: str
    stage: str
    started_at: datetime
    finished_at: datetime | None = None
    outcome: str = "running"  # completed, failed, timed_out, canceled, running, accepted…
    attempt: int = 1
    turn: int | None = None
    detail: str = ""


@dataclass
class Stage:
    name: str
    started_at: datetime
    finished_at: datetime | None
    steps: list[Step] = field(default_factory=list)


def stage_of(activity: str, input_stage: str | None) -> str:
    """The stage an activity belongs to (``input_stage``: its input's ``stage`` field)."""
    if activity in _STAGE_OF:
        return _STAGE_OF[activity]
    if input_stage in ("draft", "revise"):
        return input_stage
    return input_stage or "other"


def number_turns(steps: list[Step]) -> None:
    """Give each research-loop step its turn: a ``decide`` starts the next one."""
    turn = 0
    for step in steps:
        if step.name == "decide":
            turn += 1
        if step.stage == "research" and turn:
            step.turn = turn


def stages(steps: list[Step]) -> list[Stage]:
    """Consecutive steps of one stage grouped; a stage entered again (a revision round)
    appears again, in order."""
    out: list[Stage] = []
    for step in steps:
        if not out or out[-1].name != step.stage:
            out.append(Stage(step.stage, step.started_at, step.finished_at))
        current = out[-1]
        current.steps.append(step)
        if step.finished_at and (current.finished_at is None
                                 or step.finished_at > current.finished_at):
            current.finished_at = step.finished_at
    return out


__all__ = ["STAGE_ORDER", "Stage", "Step", "number_turns", "stage_of", "stages"]
