"""Fuzzing the policy loader (``context.policy``): a mutated policy file is a
``ContextPolicy`` or one ``PolicyError`` line that quotes nothing from it — through the
text parser the worker and ``pressroom run`` use (``policy_from_text``) and through
``load_policy`` on a file. A mapping built in code raises only ``PolicyError``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given

from context.errors import PolicyError
from context.policy import POLICY_DIR, load_policy, policy_from_mapping, policy_from_text
from tests.fuzz.conftest import fuzz
from tests.fuzz.documents import is_one_line, mutated, no_marker_in, yaml_texts

BASE: dict[str, Any] = yaml.safe_load((POLICY_DIR / "default.yaml").read_text("utf-8"))
STRICT: dict[str, Any] = yaml.safe_load((POLICY_DIR / "strict.yaml").read_text("utf-8"))


def test_the_base_documents_are_valid() -> None:
    policy_from_mapping(BASE)
    policy_from_mapping(STRICT)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-policy")


def _quiet(exc: PolicyError) -> None:
    message = str(exc)
    assert is_one_line(message)
    assert no_marker_in(message), message


@fuzz()
@given(text=yaml_texts(BASE))
@example(text="budget: &a [*a]\n")
@example(text="budget: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n")
@example(text="budget:\n  response_reserve: 0x" + "f" * 5000 + "\n")
@example(text="blocking: {block_timeout: 9999-12-31T23:59:59+99:00}\n")
def test_a_policy_text_parses_or_is_one_quiet_error(text: str) -> None:
    try:
        policy_from_text(text, origin="'fuzz.yaml'")
    except PolicyError as exc:
        _quiet(exc)


@fuzz(0.3)
@given(text=yaml_texts(STRICT))
def test_a_policy_file_loads_or_is_one_quiet_error(folder: Path, text: str) -> None:
    path = folder / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_policy(path)
    except PolicyError as exc:
        _quiet(exc)


@fuzz()
@given(data=mutated(BASE))
def test_a_policy_mapping_validates_or_is_one_error(data: dict[str, Any]) -> None:
    try:
        policy_from_mapping(data)
    except PolicyError as exc:
        assert is_one_line(str(exc))
