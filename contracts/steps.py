"""The one definition of a job's stages and of the activities the workflow calls.

Every other list of them is derived from these (``tests/test_single_definitions.py`` fails
when a literal copy appears):

- ``Stage`` / ``STAGES``: the workflow's stages, in the order a job passes through them
  (``JobState.stage``); ``review`` and ``revise`` alternate until a decision approves.
- ``AssemblyStage`` / ``ASSEMBLY_STAGES``: the stages that assemble a model request
  (``AssembleContextInput.stage``; the telemetry labels; each stage's decision text).
- ``CHECKPOINT_STAGES``: the stages a checkpoint reports as done or in progress (every
  stage but the ``start`` and ``done`` markers).
- ``ActivityName`` / ``ACTIVITY_NAMES``: the activities of a job, by registered name
  (``activities.registry`` registers exactly these, ``workflows.temporal_config``
  bounds each); ``RETIRED_ACTIVITIES``: the ones only a replayed old history schedules.
- ``ACTIVITY_STAGE``: the stage an activity always serves (the console's timeline); one
  missing serves every stage and says which in its input's ``stage``.

Pure data: the workflow imports it inside its sandbox.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "ACTIVITY_NAMES", "ACTIVITY_STAGE", "ASSEMBLY_STAGES", "CHECKPOINT_STAGES",
    "RETIRED_ACTIVITIES", "STAGES", "ActivityName", "AnyActivityName", "AssemblyStage",
    "RetiredActivityName", "Stage",
]

Stage = Literal["start", "plan", "research", "draft", "review", "revise", "publish", "done"]
STAGES: tuple[Stage, ...] = get_args(Stage)

AssemblyStage = Literal["plan", "research", "draft", "revise", "publish"]
ASSEMBLY_STAGES: tuple[AssemblyStage, ...] = get_args(AssemblyStage)

#: every stage but the two markers, in ``STAGES`` order
CHECKPOINT_STAGES: tuple[Stage, ...] = tuple(s for s in STAGES if s not in ("start", "done"))

ActivityName = Literal["store_job_spec", "assemble_context", "write_plan", "draft",
                       "record_review", "write_checkpoint", "publish", "run_tool", "decide",
                       "record_turn", "refresh_web_page", "fork_state"]
ACTIVITY_NAMES: tuple[ActivityName, ...] = get_args(ActivityName)

#: ``research``: the one-shot acquisition of ``research.mode: acquire`` (README.md,
#: "Upgrading"); the workflow still schedules it when it replays a history recorded with it,
#: and no worker registers it
RetiredActivityName = Literal["research"]
RETIRED_ACTIVITIES: frozenset[RetiredActivityName] = frozenset(get_args(RetiredActivityName))

AnyActivityName = ActivityName | RetiredActivityName

#: the stage each single-stage activity serves (``assemble_context``, ``write_checkpoint``
#: and ``refresh_web_page`` serve whichever stage their input names)
ACTIVITY_STAGE: dict[AnyActivityName, Stage] = {
    "store_job_spec": "start", "write_plan": "plan", "research": "research",
    "decide": "research", "run_tool": "research", "record_turn": "research",
    "draft": "draft", "record_review": "review", "publish": "publish",
    "fork_state": "start",
}

assert all(s in ASSEMBLY_STAGES or s in ("start", "review") for s in ACTIVITY_STAGE.values())
assert set(ASSEMBLY_STAGES) <= set(STAGES)
