"""Stage 3: supersession, topic coverage, relevance order and load modes.

| module | holds |
|---|---|
| ``stage`` | the stage: supersede older revisions, keep what a step needs |
| ``relevance`` | ``TermScan``, topic coverage, decision relevance, rank order, supersession |
| ``loading`` | load modes (resident, retrieve, disclose) and index entries |
| ``coverage`` | which required topics a tool result's content covers |

See docs/context-engine.md#ranking-coverage-and-load-modes.
"""
