"""Model prices and what a model call costs, in whole micro-dollars
(docs/configuration.md#cost-in-money).

A ``PriceTable`` maps a provider and model to a ``ModelPrice``: USD per million tokens of
uncached input, cached input (read from the provider's prompt cache), cache writes and
output. The shipped table (``contracts/prices.yaml``) is dated data written down without
network access: defaults the operator must check. ``load_prices(path)`` reads the
operator's file (``PRESSROOM_PRICES``, the same layout); its entries replace the shipped
ones model by model, so a price can be corrected or a model added without copying the rest.

A price per million tokens in USD is exactly micro-dollars (µ$) per token, so a call costs
the sum of tokens times price µ$. It is computed in ``Decimal`` and rounded *up* to a whole
micro-dollar (``call_cost``), so costs add as integers — deterministic in workflow code,
which only ever adds the integers the ``decide`` activity returned — and a cost budget is
never under-counted by rounding.

Usage counts follow the turn record: ``input_tokens`` is every input token of the request,
``cached_input_tokens`` and ``cache_write_input_tokens`` the parts of it the provider
reported as read from / written to its cache (0 when it reports none); the rest is priced
as uncached input.

A file that cannot be used is a ``PriceError``: one line naming the file and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "DEFAULT_PRICES_PATH",
    "MICRO",
    "ModelPrice",
    "PriceError",
    "PriceTable",
    "call_cost",
    "default_prices",
    "format_usd",
    "load_prices",
    "micro_usd",
    "spent_usd",
]

#: the shipped defaults (dated; the operator must check them)
DEFAULT_PRICES_PATH = Path(__file__).with_name("prices.yaml")
#: micro-dollars per dollar
MICRO = 1_000_000
#: the price fields of one model, USD per million tokens
_FIELDS = ("input", "cached_input", "cache_write", "output")
#: a provider's dated model id (``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``) is
#: priced as its undated name when the table has no entry of its own
_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
#: the most a price may be (USD per million tokens): a typo of a few digits is refused
_MAX_PRICE = Decimal(100_000)


class PriceError(ValueError):
    """A price file (or entry) that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens for one model, and where the figures came from."""

    input: Decimal
    cached_input: Decimal
    cache_write: Decimal
    output: Decimal
    source: str
    as_of: str


@dataclass(frozen=True)
class PriceTable:
    """Prices by ``(provider, model)``; ``describe`` names where the table came from."""

    prices: dict[tuple[str, str], ModelPrice]
    describe: str

    def price_of(self, provider: str, model: str) -> ModelPrice | None:
        """The price of ``model`` at ``provider`` (a dated id falls back to its undated
        name), or ``None`` when the table has none."""
        found = self.prices.get((provider, model))
        if found is None and _DATED.search(model):
            found = self.prices.get((provider, _DATED.sub("", model)))
        return found


def micro_usd(usd: Decimal | str | int) -> int:
    """``usd`` in whole micro-dollars, rounded up (a budget or a cost never comes out low)."""
    return int((Decimal(usd) * MICRO).to_integral_value(rounding=ROUND_CEILING))


def format_usd(micro: int) -> str:
    """``$0.012345`` for 12 345 µ$: six decimals, exact."""
    return f"${Decimal(micro) / MICRO:.6f}"


def spent_usd(micro: int, unpriced_calls: int = 0) -> str:
    """What the priced calls cost, saying so when some were not priced: ``$0.012345``;
    ``not priced`` when no call was (never ``$0.000000`` for a model the worker has no
    price for); ``$0.012345 + 3 calls not priced`` in between."""
    if not unpriced_calls:
        return format_usd(micro)
    if not micro:
        return "not priced"
    return f"{format_usd(micro)} + {unpriced_calls} call{'s' if unpriced_calls != 1 else ''} " \
        "not priced"


def call_cost(price: ModelPrice, *, input_tokens: int, output_tokens: int,
              cached_input_tokens: int = 0, cache_write_input_tokens: int = 0) -> int:
    """One call's cost in whole micro-dollars (rounded up). ``input_tokens`` counts every
    input token; the cached and cache-write parts are priced at their own rates and the rest
    (never below zero) as uncached input."""
    uncached = max(0, input_tokens - cached_input_tokens - cache_write_input_tokens)
    exact = (uncached * price.input + cached_input_tokens * price.cached_input
             + cache_write_input_tokens * price.cache_write + output_tokens * price.output)
    return int(exact.to_integral_value(rounding=ROUND_CEILING))


def _price(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PriceError(f"{where} must be a number of USD per million tokens")
    try:
        # through str: the YAML float 0.075 means the decimal 0.075, not its binary neighbour
        price = Decimal(str(value))
    except InvalidOperation:
        raise PriceError(f"{where} must be a number of USD per million tokens") from None
    if not price.is_finite() or price < 0 or price > _MAX_PRICE:
        raise PriceError(f"{where} must be between 0 and {_MAX_PRICE} USD per million tokens")
    return price


def _parse(data: Any, name: str) -> dict[tuple[str, str], ModelPrice]:
    if not isinstance(data, dict):
        raise PriceError(f"{name}: a price file is a mapping with 'as_of' and 'models'")
    unknown = sorted(set(data) - {"as_of", "source_note", "models"})
    if unknown:
        raise PriceError(f"{name}: unknown key {unknown[0]!r} (known: as_of, source_note, "
                         "models)")
    as_of = data.get("as_of")
    if isinstance(as_of, date):  # YAML reads an unquoted 2025-01-31 as a date
        as_of = as_of.isoformat()
    if not isinstance(as_of, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of):
        raise PriceError(f"{name}: as_of must be a date written YYYY-MM-DD")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise PriceError(f"{name}: models must map each provider to its models' prices")
    prices: dict[tuple[str, str], ModelPrice] = {}
    for provider, entries in models.items():
        if not isinstance(provider, str) or not isinstance(entries, dict):
            raise PriceError(f"{name}: models.{provider} must map model names to prices")
        for model, entry in entries.items():
            where = f"{name}: models.{provider}.{model}"
            if not isinstance(model, str) or not isinstance(entry, dict):
                raise PriceError(f"{where} must be a mapping of {', '.join(_FIELDS)}, source")
            missing = [f for f in _FIELDS if f not in entry]
            if missing:
                raise PriceError(f"{where}.{missing[0]} is missing")
            extra = sorted(set(entry) - {*_FIELDS, "source"})
            if extra:
                raise PriceError(f"{where}: unknown key {extra[0]!r}")
            source = entry.get("source", "")
            if not isinstance(source, str):
                raise PriceError(f"{where}.source must be text")
            values = {f: _price(entry[f], f"{where}.{f}") for f in _FIELDS}
            prices[(provider, model)] = ModelPrice(**values, source=source, as_of=as_of)
    return prices


def _read(path: Path) -> dict[tuple[str, str], ModelPrice]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceError(f"cannot read price file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise PriceError(f"price file {path} is not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise PriceError(f"price file {path} is not valid YAML{line}") from None
    return _parse(data, str(path))


def default_prices() -> PriceTable:
    """The shipped table alone."""
    prices = _read(DEFAULT_PRICES_PATH)
    return PriceTable(prices, f"the shipped defaults (contracts/{DEFAULT_PRICES_PATH.name})")


def load_prices(path: Path | None) -> PriceTable:
    """The shipped table with the operator's file at ``path`` over it (``None``: the
    shipped table alone); a ``PriceError`` names the file and the key at fault."""
    table = default_prices()
    if path is None:
        return table
    prices = {**table.prices, **_read(path)}
    return PriceTable(prices, f"{path} over the shipped defaults")
