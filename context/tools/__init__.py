"""Stage 4: structure — tool call/result pairing, screening and compaction.

| module | holds |
|---|---|
| ``stage`` | ``ToolStage``: pair, screen results, keep recent turns, compact older ones |
| ``pairing`` | ``pair_tool_history``: one result per call, every repair a typed anomaly |
| ``aging`` | which exchanges have aged out of the verbatim window (blocks, whole turns) |
| ``compaction`` | older exchanges folded into a structured history summary |
| ``transforms`` | truncation and structured summaries under preservation assertions |
| ``summary`` | extracting and rendering the facts a summary must preserve |

See docs/context-engine.md#structure-trust-zones-and-tool-pairing and
docs/context-engine.md#transforms-and-preservation-assertions.
"""
