"""ContextPolicy: strict YAML validation, identity and digest
(docs/context-engine.md#policy-digest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from context import PolicyError, load_policy, policy_from_mapping
from context.policy import POLICY_DIR, parse_duration


def _default_mapping() -> dict[str, Any]:
    data = yaml.safe_load((POLICY_DIR / "default.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_shipped_policies_load_with_id_revision_and_digest() -> None:
    for name in ("default", "strict"):
        policy = load_policy(name)
        assert policy.id == name
        assert policy.revision >= 1
        assert policy.digest.startswith("sha256:") and len(policy.digest) == 71
    assert load_policy("default").digest != load_policy("strict").digest


def test_digest_ignores_layout_but_not_meaning(tmp_path: Path) -> None:
    data = _default_mapping()
    reordered = dict(reversed(list(data.items())))
    path = tmp_path / "p.yaml"
    path.write_text("# a comment\n" + yaml.safe_dump(reordered, sort_keys=False), encoding="utf-8")
    assert load_policy(path).digest == load_policy("default").digest
    data["budget"]["safety_margin"] = 513
    assert policy_from_mapping(data).digest != load_policy("default").digest


def test_unknown_top_level_key_is_named() -> None:
    data = _default_mapping()
    data["budgett"] = {}
    with pytest.raises(PolicyError, match="unknown key 'budgett'"):
        policy_from_mapping(data)


def test_unknown_nested_key_is_named() -> None:
    data = _default_mapping()
    data["budget"]["partitions"]["control"]["minimun"] = 5
    with pytest.raises(PolicyError, match=r"unknown key 'budget\.partitions\.control\.minimun'"):
        policy_from_mapping(data)


def test_negative_budget_is_rejected() -> None:
    data = _default_mapping()
    data["budget"]["response_reserve"] = -1
    with pytest.raises(PolicyError, match=r"budget\.response_reserve"):
        policy_from_mapping(data)


def test_bad_enum_value_is_named() -> None:
    data = _default_mapping()
    data["security"]["secret_material"] = "ignore"
    with pytest.raises(PolicyError, match=r"security\.secret_material"):
        policy_from_mapping(data)


def test_minimum_above_maximum_is_rejected() -> None:
    data = _default_mapping()
    data["budget"]["partitions"]["state"] = {"minimum": 10, "maximum": 5, "eviction": "first"}
    with pytest.raises(PolicyError, match="maximum 5 is below minimum 10"):
        policy_from_mapping(data)


def test_every_source_type_needs_a_trust_ceiling() -> None:
    data = _default_mapping()
    del data["trust"]["default_by_source"]["web_page"]
    with pytest.raises(PolicyError, match="web_page"):
        policy_from_mapping(data)


def test_every_partition_must_be_configured() -> None:
    data = _default_mapping()
    del data["budget"]["partitions"]["background"]
    with pytest.raises(PolicyError, match="background"):
        policy_from_mapping(data)


def test_claimed_digest_must_match() -> None:
    data = _default_mapping()
    data["policy"]["digest"] = "sha256:" + "0" * 64
    with pytest.raises(PolicyError, match="does not match computed"):
        policy_from_mapping(data)
    data["policy"]["digest"] = load_policy("default").digest
    assert policy_from_mapping(data).digest == load_policy("default").digest


def test_unknown_preservation_key_and_bad_pattern() -> None:
    data = _default_mapping()
    data["transforms"]["preserve"] = ["goal", "vibes"]
    with pytest.raises(PolicyError, match="vibes"):
        policy_from_mapping(data)
    data = _default_mapping()
    data["security"]["extra_secret_patterns"] = ["(unclosed"]
    with pytest.raises(PolicyError, match="does not compile"):
        policy_from_mapping(data)


def test_unknown_name_unreadable_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="unknown policy name 'nope'"):
        load_policy("nope")
    with pytest.raises(PolicyError, match="cannot read policy"):
        load_policy(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy: [unclosed\n", encoding="utf-8")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(PolicyError, match="top level must be a mapping"):
        load_policy(listy)


def test_durations() -> None:
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("12h") == 43200
    assert parse_duration(90) == 90
    for bad in ("7w", -1, True, "d7"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_redact_requires_the_redact_transform() -> None:
    data = _default_mapping()
    data["transforms"]["allowed"] = ["summarize", "excerpt"]
    with pytest.raises(PolicyError, match="lacks 'redact'"):
        policy_from_mapping(data)


@pytest.mark.parametrize("kind", ["json", "ini", "ini-no-section", "yaml", "bad-yaml",
                                  "tabbed-yaml"])
def test_a_policy_file_s_errors_never_quote_it(tmp_path: Path, kind: str) -> None:
    """A policy path pointing at a credentials file by mistake: the error names the file,
    the line and the key path — never a value or key the file holds (before: the YAML
    error quoted the offending line, and validation errors ``(got '<value>')``)."""
    from tests.secret_files import leaked, write_secret_files

    path = write_secret_files(tmp_path)[kind]
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    text = str(caught.value)
    assert str(path) in text and "\n" not in text
    assert leaked(text) == [], text
    # nothing chained either (Temporal would carry a cause into history)
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_a_policy_file_s_errors_name_lines_and_fields(tmp_path: Path) -> None:
    from tests.secret_files import SECRET_KEY, TOKEN, write_secret_files

    text = _policy_error(write_secret_files(tmp_path)["yaml"])
    assert "field 'budget.response_reserve' (line 4): Input should be a valid integer" in text
    assert "field 'blocking.block_timeout' (line 6): duration must be like" in text
    assert "got <value>" in text
    assert "unknown key (line 13)" in text
    assert "field 'trust.default_by_source.<key>.[key]' (line 12)" in text
    assert TOKEN not in text and SECRET_KEY not in text
    # a typo'd key is named by its line, with the key it probably meant
    typo = tmp_path / "typo.yaml"
    data = _default_mapping()
    data["budgett"] = data.pop("budget")
    typo.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    text = _policy_error(typo)
    assert "unknown key (line" in text and "did you mean 'budget'?" in text
    assert "budgett" not in text
    # YAML errors keep PyYAML's own words and position, not the line's text
    bad = write_secret_files(tmp_path)["tabbed-yaml"]
    text = _policy_error(bad)
    assert "cannot start any token at line 1, column" in text


def _policy_error(path: Path) -> str:
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    return str(caught.value)
