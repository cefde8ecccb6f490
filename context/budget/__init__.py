"""Stage 6: partition budgets on real token counts.

| module | holds |
|---|---|
| ``stage`` | ``BudgetStage``: build units, allocate, evict, check required evidence |
| ``allocation`` | ``allocate``: minimums, maximums, borrowing, eviction, lazy costing |
| ``units`` | one all-or-nothing unit per admitted item, in rank order per partition |
| ``costs`` | the exact token cost of each message as it will be sent |

See docs/context-engine.md#partition-budgets.
"""
