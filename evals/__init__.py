"""Evaluations of Pressroom's own machinery, run by ``pressroom eval ...``.

``evals.context_lab`` measures the context engine (Layer 1 of docs/context-engine.md#graders:
what the assembler hands the model, not what the model does with it). Bundled datasets live
next to the code (``evals/context/*.jsonl``); reports are written under ``reports/`` and never
committed.
"""
