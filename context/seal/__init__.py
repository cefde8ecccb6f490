"""Stage 7: render, serialize for the provider, check the exact count, seal the manifest.

| module | holds |
|---|---|
| ``finish`` | ``Finisher``: the render loop, the exact-count check, the sealed ``Outcome`` |
| ``render`` | messages per trust zone, data blocks, the MISSING EVIDENCE notice |
| ``cache`` | the manifest's cache identity (stable prefix) |
| ``adapters`` | OpenAI Chat and Anthropic Messages serialization and counting |

See docs/context-engine.md#render-serialize-and-seal.
"""
