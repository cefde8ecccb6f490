"""A search hit line is cut at ``MAX_HIT_LINE_CHARS`` but never inside a secret.

Real document folder, the real ``search`` tool, and the real detector on the result as the
engine stores it (JSON): a cut through a secret would leave a partial value no shape
matches, so it would reach the model unflagged (SECURITY.md, section 4).

Values are assembled from parts so this file holds no literal credential shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from activities.research_tools import run_source_tool, search_hits
from activities.research_tools.arguments import MAX_HIT_LINE_CHARS
from activities.research_tools.hit_lines import hit_line
from context.admission.security import redact_secrets
from contracts.source_specs import DocumentSourceSpec
from tests.sources.conftest import roots

VALUE = "Xk29" + "fjQm2vB7" + "Lq83Zr"


@pytest.mark.parametrize("assignment", [f'password = "{VALUE}"', f"DB_PASSWORD={VALUE}",
                                        f"api_key: &quot;{VALUE}&quot;"])
@pytest.mark.parametrize("offset", [-12, -6, -2, 0])
async def test_a_hit_line_cut_through_a_secret_holds_no_part_of_it(
        tmp_path: Path, assignment: str, offset: int) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    # the value's first characters sit just before the cut
    head = "retry settings " + "x" * (MAX_HIT_LINE_CHARS - 15 + offset - assignment.index(
        VALUE))
    (docs / "config.md").write_text(f"{head}{assignment} and the rest of the line\n",
                                    encoding="utf-8")
    source = DocumentSourceSpec(name="handbook", path=str(docs))
    result = await run_source_tool("search", {"source": "handbook", "query": "retry"},
                                   [source], {"PRESSROOM_HOME": str(tmp_path / "home")},
                                   roots=roots(tmp_path))
    [(_path, _rev, _number, text)] = list(search_hits(result))
    assert text.startswith("retry settings ")
    stored = json.dumps(result, sort_keys=True, ensure_ascii=False)  # as the engine sees it
    shown = redact_secrets(stored)
    assert VALUE[:2] not in shown.replace("[REDACTED", ""), shown[-120:]


def test_a_hit_line_keeps_a_whole_secret_for_the_gate_and_cuts_plain_text() -> None:
    whole = f'{"y" * 200} password = "{VALUE}" {"z" * 200}'
    assert VALUE in hit_line(whole)  # whole before the cut: the gate redacts and flags it
    assert hit_line("w" * 1000) == "w" * MAX_HIT_LINE_CHARS
    assert hit_line("short") == "short"
