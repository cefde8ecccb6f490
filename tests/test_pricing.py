"""The price table (``contracts/pricing.py``, docs/configuration.md#cost-in-money): the
shipped defaults load and say where each figure came from; the operator's file replaces
entries model by model; a file that cannot be used is one ``PriceError`` line naming the
file and the key; costs are exact whole micro-dollars, rounded up; ``resolve
--cost-budget`` takes USD exactly."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from cli.resolution import build_resolution
from contracts.errors import JobError
from contracts.pricing import (
    DEFAULT_PRICES_PATH,
    PriceError,
    call_cost,
    default_prices,
    format_usd,
    load_prices,
    micro_usd,
    spent_usd,
)

GOOD = """\
as_of: 2026-01-31
models:
  openai:
    gpt-4o: {input: 1.0, cached_input: 0.1, cache_write: 1.0, output: 4.0, source: invoice}
  extractive:
    extractive-v1: {input: 0.075, cached_input: 0, cache_write: 0, output: 0}
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_table_is_dated_sourced_and_covers_both_providers() -> None:
    table = default_prices()
    providers = {provider for provider, _model in table.prices}
    assert providers == {"openai", "anthropic"}
    for (provider, model), price in table.prices.items():
        assert price.as_of == "2025-11-24", (provider, model)
        assert price.source.startswith("https://"), (provider, model)
        assert price.cached_input <= price.input <= price.cache_write, (provider, model)
    assert table.describe == "the shipped defaults (contracts/prices.yaml)"
    assert "DEFAULTS THE OPERATOR MUST CHECK" in DEFAULT_PRICES_PATH.read_text(encoding="utf-8")
    # a provider's dated id is priced as its undated name; an unknown model has no price
    dated = table.price_of("anthropic", "claude-sonnet-4-5-20250929")
    assert dated is not None and dated == table.price_of("anthropic", "claude-sonnet-4-5")
    assert table.price_of("openai", "gpt-4o-2024-08-06") == table.price_of("openai", "gpt-4o")
    assert table.price_of("openai", "gpt-4o-audio-preview") is None
    assert table.price_of("extractive", "extractive-v1") is None


def test_the_operators_file_replaces_entries_model_by_model(tmp_path: Path) -> None:
    table = load_prices(_file(tmp_path, GOOD))
    gpt = table.price_of("openai", "gpt-4o")
    assert gpt is not None and gpt.input == Decimal("1.0") and gpt.source == "invoice"
    assert gpt.as_of == "2026-01-31"  # an unquoted YAML date is read as the date it is
    assert table.price_of("anthropic", "claude-haiku-4-5") is not None  # the rest stays
    offline = table.price_of("extractive", "extractive-v1")
    assert offline is not None and offline.input == Decimal("0.075")  # not 0.07499999…
    assert str(tmp_path) in table.describe


def test_costs_are_exact_micro_dollars_rounded_up(tmp_path: Path) -> None:
    table = load_prices(_file(tmp_path, GOOD))
    gpt, offline = table.price_of("openai", "gpt-4o"), table.price_of("extractive",
                                                                      "extractive-v1")
    assert gpt is not None and offline is not None
    # 600 uncached x 1.0 + 300 cached x 0.1 + 100 written x 1.0 + 50 out x 4.0
    assert call_cost(gpt, input_tokens=1000, output_tokens=50, cached_input_tokens=300,
                     cache_write_input_tokens=100) == 600 + 30 + 100 + 200
    assert call_cost(offline, input_tokens=1, output_tokens=0) == 1  # 0.075 rounds up
    assert call_cost(offline, input_tokens=40, output_tokens=0) == 3  # 3.0 exactly
    # cached counts above the input never make the uncached part negative
    assert call_cost(gpt, input_tokens=10, output_tokens=0, cached_input_tokens=20) == 2
    assert sum(call_cost(offline, input_tokens=1000, output_tokens=0)
               for _ in range(1000)) == 75_000
    assert micro_usd("0.05") == 50_000 and micro_usd(Decimal("0.0000001")) == 1
    assert format_usd(1_234_567) == "$1.234567" and format_usd(0) == "$0.000000"
    # what a job spent, never $0 for calls the worker had no price for
    assert spent_usd(1500) == "$0.001500" and spent_usd(0) == "$0.000000"
    assert spent_usd(0, unpriced_calls=4) == "not priced"
    assert spent_usd(1500, unpriced_calls=1) == "$0.001500 + 1 call not priced"
    assert spent_usd(1500, unpriced_calls=3) == "$0.001500 + 3 calls not priced"


@pytest.mark.parametrize(("text", "needle"), [
    ("models: [unclosed\n", "is not valid YAML at line"),
    ("- a\n- b\n", "a price file is a mapping"),
    ("as_of: 2026-01-31\nmodels: {}\ncurrency: EUR\n", "unknown key 'currency'"),
    ("models: {openai: {gpt-4o: {input: 1, cached_input: 1, cache_write: 1, output: 1}}}\n",
     "as_of must be a date"),
    ("as_of: yesterday\nmodels: {}\n", "as_of must be a date"),
    ("as_of: 2026-01-31\nmodels: {}\n", "models must map each provider"),
    ("as_of: 2026-01-31\nmodels: {openai: [gpt-4o]}\n", "models.openai must map model names"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: 1, cached_input: 1, "
     "cache_write: 1}}}\n", "models.openai.gpt-4o.output is missing"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: 1, cached_input: 1, "
     "cache_write: 1, output: 1, discount: 2}}}\n", "models.openai.gpt-4o: unknown key 'discount'"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: cheap, cached_input: 1, "
     "cache_write: 1, output: 1}}}\n", "models.openai.gpt-4o.input must be a number"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: -1, cached_input: 1, "
     "cache_write: 1, output: 1}}}\n", "models.openai.gpt-4o.input must be between 0"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: .nan, cached_input: 1, "
     "cache_write: 1, output: 1}}}\n", "models.openai.gpt-4o.input must be between 0"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: true, cached_input: 1, "
     "cache_write: 1, output: 1}}}\n", "models.openai.gpt-4o.input must be a number"),
    ("as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: 1, cached_input: 1, "
     "cache_write: 1, output: 1, source: [a]}}}\n", "models.openai.gpt-4o.source must be text"),
])
def test_a_bad_price_file_is_one_line_naming_the_file_and_key(
        tmp_path: Path, text: str, needle: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(PriceError) as caught:
        load_prices(path)
    message = str(caught.value)
    assert needle in message and "\n" not in message, message
    assert str(path) in message


def test_a_missing_or_binary_price_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PriceError, match=r"cannot read price file .*absent\.yaml"):
        load_prices(tmp_path / "absent.yaml")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00secret")
    with pytest.raises(PriceError, match="is not UTF-8 text") as caught:
        load_prices(binary)
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize(("raw", "micro"), [("5", 5_000_000), ("0.25", 250_000),
                                            ("$12.50", 12_500_000), ("0.000001", 1)])
def test_resolve_cost_budget_takes_usd_exactly(raw: str, micro: int) -> None:
    resolution = build_resolution(cost_budget=raw)
    assert resolution.action == "raise_budget"
    assert resolution.cost_budget_micro_usd == micro
    # an unset cost budget is not in the signed body: older signatures still verify
    assert "cost_budget_micro_usd" not in build_resolution(token_budget=5).signed_body()
    assert resolution.signed_body()["cost_budget_micro_usd"] == micro


@pytest.mark.parametrize("raw", ["0", "-1", "0.0000001", "1e3", "five", "", "1,5", "\u0661"])
def test_resolve_refuses_a_cost_budget_that_is_not_a_positive_amount(raw: str) -> None:
    with pytest.raises(JobError, match="--cost-budget must be a positive amount of USD"):
        build_resolution(cost_budget=raw)


def test_a_worker_with_an_unusable_price_file_stops_with_one_line(tmp_path: Path) -> None:
    from settings import Settings
    from worker import price_table

    path = _file(tmp_path, "as_of: 2026-01-31\nmodels: {openai: {gpt-4o: {input: x}}}\n")
    with pytest.raises(JobError) as caught:
        price_table(Settings(prices=path))
    message = str(caught.value)
    assert message.startswith(f"PRESSROOM_PRICES: {path}: models.openai.gpt-4o."), message
    assert price_table(Settings()).prices == default_prices().prices
