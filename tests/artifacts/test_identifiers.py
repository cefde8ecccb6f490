"""Identifier rules: what is refused is refused for the right reason, and every accepted
id round-trips exactly through both engines."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifacts import ArtifactKind, ArtifactStore, InvalidArtifact, Principal, Scope
from artifacts.ids import MAX_ID_LENGTH, check_identifier

_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}


def _acceptable(value: str) -> bool:
    return (
        0 < len(value) <= MAX_ID_LENGTH
        and "/" not in value and "\\" not in value
        and value not in (".", "..")
        and value == value.strip()
        and not any(unicodedata.category(c) in _FORBIDDEN_CATEGORIES for c in value)
    )


@given(st.text(max_size=300))
def test_identifier_rule_matches_its_specification(value: str) -> None:
    if _acceptable(value):
        assert check_identifier(value, "id") == value
    else:
        with pytest.raises(InvalidArtifact):
            check_identifier(value, "id")


TRICKY_VALID = [
    "plan:run-1:step-2",
    "Überblick \u2013 Entwurf 3",
    "研究计划-42",
    "emoji-📰",
    "a.b..c",
    "with inner  spaces",
    "x" * MAX_ID_LENGTH,
    "%2F-is-not-a-slash",
]


async def test_valid_ids_round_trip(store: ArtifactStore, alice: Principal, scope: Scope) -> None:
    for i, artifact_id in enumerate(TRICKY_VALID):
        body = f"body {i}".encode()
        rec = await store.put(ArtifactKind.DOCUMENT, artifact_id, body, principal=alice,
                              scope=scope, trust="trusted_state", parent_revision=None)
        assert rec.artifact_id == artifact_id
        got_rec, got = await store.get(ArtifactKind.DOCUMENT, artifact_id, principal=alice)
        assert (got_rec.artifact_id, got) == (artifact_id, body)
