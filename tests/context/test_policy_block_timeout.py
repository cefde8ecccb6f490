"""``blocking.block_timeout``: the policy says how long a blocked job waits
(docs/architecture.md#blocked-steps)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from context import PolicyError, load_policy, policy_from_mapping
from context.policy import DEFAULT_BLOCK_TIMEOUT, POLICY_DIR


def _mapping(name: str = "default") -> dict[str, Any]:
    data = yaml.safe_load((POLICY_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_shipped_policies_state_their_block_timeout() -> None:
    for name in ("default", "strict"):
        assert "block_timeout" in _mapping(name)["blocking"]
        assert load_policy(name).blocking.block_timeout == 24 * 3600


@pytest.mark.parametrize(("raw", "seconds"), [("30m", 1800), ("2h", 7200), ("7d", 604800),
                                              (45, 45), ("90s", 90)])
def test_durations_parse(raw: object, seconds: int) -> None:
    data = _mapping()
    data["blocking"]["block_timeout"] = raw
    assert policy_from_mapping(data).blocking.block_timeout == seconds


@pytest.mark.parametrize("raw", [0, "0s", -5, "-1h", True, 1.5, "1.5h", "soon", "24 hours",
                                 None, [1]])
def test_bad_block_timeout_is_an_error_naming_the_key(raw: object) -> None:
    data = _mapping()
    data["blocking"]["block_timeout"] = raw
    with pytest.raises(PolicyError, match=r"blocking\.block_timeout"):
        policy_from_mapping(data)


def test_omitted_block_timeout_defaults_to_a_day() -> None:
    data = _mapping()
    del data["blocking"]["block_timeout"]
    assert policy_from_mapping(data).blocking.block_timeout == DEFAULT_BLOCK_TIMEOUT == 86400


def test_block_timeout_is_part_of_the_digest() -> None:
    data = _mapping()
    data["blocking"]["block_timeout"] = "1h"
    assert policy_from_mapping(data).digest != load_policy("default").digest
