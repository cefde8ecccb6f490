"""``pressroom explain``'s rendering of a real manifest with untokenized evictions."""

from __future__ import annotations

import io
import random

from rich.console import Console

from context import Ready, assemble
from tests.context.builders import item, request
from workflows.explain import render_manifest


def test_explain_shows_untokenized_evictions_and_a_lower_bound_demand() -> None:
    rnd = random.Random(11)
    words = ["retry", "backoff", "429", "rate", "limit", "jitter"]
    cands = [item(f"doc-{i:03d}", "rate limit 429 " + " ".join(
        rnd.choice(words) for _ in range(rnd.randint(200, 3000)))) for i in range(60)]
    out = assemble(request(cands))
    assert isinstance(out, Ready)
    part = out.manifest.budget.partitions["direct_evidence"]
    assert part.uncounted > 0
    buf = io.StringIO()
    render_manifest(Console(file=buf, width=400, color_system=None),
                    out.manifest.model_dump(mode="json"))
    text = buf.getvalue()
    assert f"≥ {part.demand} ({part.uncounted} untokenized)" in text
    assert "not tokenized" in text  # the excluded table shows each bound's detail
