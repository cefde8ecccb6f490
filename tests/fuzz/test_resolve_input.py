"""Fuzzing the resolve input: ``pressroom resolve``'s flags through ``build_resolution``
(``--add-source`` is YAML typed on a command line) raise only ``JobError``, and a
``ResolveInput`` payload — a signal or Update the workflow decodes — validates or raises only
pydantic's ``ValidationError``. What is accepted survives the JSON round trip the payload
converter makes, and its signed body is canonical JSON."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from cli.resolution import build_resolution
from contracts.errors import JobError
from contracts.workflow_messages import ResolveInput
from tests.fuzz.conftest import fuzz
from tests.fuzz.documents import is_one_line, json_values, mutated, yaml_texts

SOURCE: dict[str, Any] = {"kind": "git", "name": "extra", "repo": "https://example.org/r.git",
                          "commit": "b" * 40, "paths": ["docs"]}
RESOLVE: dict[str, Any] = {"action": "add_source", "source": SOURCE, "note": "more docs",
                           "evidence_budget": 100, "signature": None}

_counts = st.one_of(st.none(), st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 1]))
_text = st.one_of(st.none(), st.text(max_size=30), st.sampled_from(["=", "a=", "=1", "k=v=w"]))


def test_the_base_documents_are_valid() -> None:
    build_resolution(add_source=yaml.safe_dump(SOURCE))
    ResolveInput.model_validate(RESOLVE)


def _accepted(resolution: ResolveInput) -> None:
    assert ResolveInput.model_validate_json(resolution.model_dump_json()) == resolution
    json.dumps(resolution.signed_body(), allow_nan=False, sort_keys=True)


@fuzz()
@given(flags=st.fixed_dictionaries({}, optional={
    "add_source": st.one_of(yaml_texts(SOURCE), st.text(max_size=40)),
    "refresh": _text, "budget": _counts, "context_limit": _counts, "accept": _text,
    "token_budget": _counts, "accept_gathered": st.booleans(),
    "cost_budget": st.one_of(_text, st.decimals(allow_nan=True).map(str)),
    "note": st.text(max_size=40)}))
@example(flags={"cost_budget": "\u0661"})  # a digit, but not an ASCII one
@example(flags={"cost_budget": "$0.0000005"})
@example(flags={"add_source": "[" * 5000 + "]" * 5000})  # RecursionError in PyYAML
@example(flags={"add_source": "&a [*a]"})
@example(flags={"add_source": '{kind: "a\\nb", name: x}'})  # a line break in the message
@example(flags={"add_source": "kind: git\nname: x\nrepo: /r\ncommit: 2026-13-45"})
def test_resolve_flags_build_an_input_or_one_error(flags: dict[str, Any]) -> None:
    try:
        resolution = build_resolution(**flags)
    except JobError as exc:
        assert is_one_line(str(exc))
        return
    _accepted(resolution)


@fuzz()
@given(data=mutated(RESOLVE, leaves=json_values))
def test_a_resolve_payload_validates_or_is_a_validation_error(data: dict[str, Any]) -> None:
    try:
        resolution = ResolveInput.model_validate(data)
    except ValidationError:
        return
    _accepted(resolution)


@fuzz(0.5)
@given(text=st.one_of(st.text(max_size=80), mutated(RESOLVE, leaves=json_values).map(
    lambda d: json.dumps(d, allow_nan=True))))
def test_a_resolve_payload_from_json_validates_or_is_a_validation_error(text: str) -> None:
    try:
        resolution = ResolveInput.model_validate_json(text)
    except ValidationError:
        return
    _accepted(resolution)
