"""The assembly: ``assemble`` (the engine's entry point), the pipeline that alone knows
every stage, and the state every stage shares.

Imports run one way: ``state`` ← the stage folders ← ``pipeline`` ← ``engine``.
See docs/context-engine.md#the-pipeline-stage-by-stage.
"""
