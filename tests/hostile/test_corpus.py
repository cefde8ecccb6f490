"""Run every hostile input of ``tests/hostile/corpus.py`` through its component."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.corpus import CORPUS, HostileInput


def test_the_corpus_is_well_formed() -> None:
    names = [h.name for h in CORPUS]
    assert len(names) == len(set(names))
    assert all(h.attacks.strip() and h.must.strip() for h in CORPUS)


@pytest.mark.parametrize("hostile", [h.param() for h in CORPUS])
def test_hostile_input(hostile: HostileInput, tmp_path: Path) -> None:
    hostile.run(tmp_path)
