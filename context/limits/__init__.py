"""Stage 5: source limits — excerpts, index entries and the data blocks they become.

| module | holds |
|---|---|
| ``stage`` | the stage: apply each data item's source limit |
| ``source_limits`` | the per-source-type limit rules (excerpt with line range, log failures) |
| ``shaping`` | one item through its limit, memoized; disclosure of oversized items |
| ``block_store`` | each data block built once per assembly; exact and lower-bound costing |
| ``blocks`` | the delimited data block format untrusted text is rendered in |
| ``floors`` | a proven lower bound on a text's token count, without tokenizing |

See docs/context-engine.md#source-limits.
"""
