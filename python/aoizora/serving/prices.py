"""The price of a TPU chip-hour by generation: the shipped table (prices.json, each figure with
its source and the date it holds for) or a user's file of the same schema, which replaces the
shipped one whole (a generation it leaves out has no price).

    table = load()                       the shipped table
    table = load("mine.json")            a user's; UserError, one line naming the file and
                                         the field, on anything but the schema below
    table.usd_per_chip_hour("v6e")       -> 2.7, or None when the table has no figure
    table.why_missing("v5e")             -> the table's reason, or a default sentence
    table.prices["v6e"]                  -> Price(usd_per_chip_hour, date, source, note)

The schema (aoizora.prices/1), every field checked:

    {"schema": "aoizora.prices/1", "currency": "USD",
     "prices": {GEN: {"usd_per_chip_hour": > 0, "date": "YYYY-MM-DD", "source": "where",
                      "note": "optional"}},
     "missing": {GEN: "why there is no figure"}}           optional
    GEN: a generation of the catalog (v4, v5e, v5p, v6e, tpu7x); on TPU7x a chip is both of
    its TensorCores. Other top-level fields ("unit", "read") are for the reader.
"""

from __future__ import annotations

import datetime
import json
import math
import os
from dataclasses import dataclass, field

from aoizora.errors import UserError

SCHEMA = "aoizora.prices/1"
SHIPPED = os.path.join(os.path.dirname(__file__), "prices.json")
_ENTRY_FIELDS = {"usd_per_chip_hour", "date", "source", "note"}


@dataclass(frozen=True)
class Price:
    usd_per_chip_hour: float   # USD for one chip for one hour
    date: str                  # the day the figure holds for (YYYY-MM-DD)
    source: str                # where it comes from (a URL, a contract)
    note: str = ""


@dataclass(frozen=True)
class PriceTable:
    path: str                                  # the file it was read from
    prices: dict[str, Price]                   # generation -> its price
    missing: dict[str, str] = field(default_factory=dict)  # generation -> why no figure

    def usd_per_chip_hour(self, generation: str) -> float | None:
        p = self.prices.get(generation)
        return None if p is None else p.usd_per_chip_hour

    def why_missing(self, generation: str) -> str:
        return self.missing.get(generation) or (
            f"no price for {generation} in {self.path}; give one with --prices FILE")


def generations() -> list[str]:
    """The chip generations of the catalog, those a price may be given for."""
    from aoizora import _core

    return sorted({n.partition(":")[0] for n in _core.catalog_names()})


def load(path: str | None = None) -> PriceTable:
    """The table at `path` (None: the shipped one). Raises UserError (module doc)."""
    from aoizora.inputs.validate import no_duplicate_keys, read_text

    shown = path or SHIPPED
    text = read_text(shown, "--prices", "price table")
    try:
        d = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except ValueError as e:
        raise UserError(f"--prices {shown}: not a price table ({e})") from None
    try:
        return _table(shown, d)
    except ValueError as e:
        raise UserError(f"--prices {shown}: {e}") from None


def _table(path: str, d) -> PriceTable:
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        from aoizora.inputs import json_document

        raise ValueError(f"not a price table (schema {SCHEMA}, as serving/prices.json): "
                         f"{json_document.describe(d)}")
    if d.get("currency") != "USD":
        raise ValueError(f"'currency' must be \"USD\", got {d.get('currency')!r}")
    prices, missing = d.get("prices"), d.get("missing", {})
    for name, value in (("prices", prices), ("missing", missing)):
        if not isinstance(value, dict):
            raise ValueError(f"'{name}' must be an object keyed by generation, got "
                             f"{type(value).__name__}")
    known = generations()
    for gen in list(prices) + list(missing):
        if gen not in known:
            from aoizora.inputs.validate import did_you_mean

            hint = did_you_mean(gen, known) or f"the generations are {', '.join(known)}"
            raise ValueError(f"unknown generation {gen!r}: {hint}")
    for gen in set(prices) & set(missing):
        raise ValueError(f"{gen} is under both 'prices' and 'missing'")
    for gen, why in missing.items():
        if not isinstance(why, str) or not why.strip():
            raise ValueError(f"missing.{gen} must say why there is no figure")
    return PriceTable(path, {gen: _price(gen, e) for gen, e in prices.items()}, dict(missing))


def _price(gen: str, e) -> Price:
    where = f"prices.{gen}"
    if not isinstance(e, dict):
        raise ValueError(f"{where} must be an object, got {type(e).__name__}")
    unknown = sorted(set(e) - _ENTRY_FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (fields: "
                         f"{', '.join(sorted(_ENTRY_FIELDS))})")
    usd = e.get("usd_per_chip_hour")
    if (isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd)
            or usd <= 0):
        raise ValueError(f"{where}.usd_per_chip_hour must be a number > 0 (USD for one chip "
                         f"for one hour), got {usd!r}")
    for key in ("source", "date"):
        if not isinstance(e.get(key), str) or not e[key].strip():
            raise ValueError(f"{where} needs a {key!r}: every figure says where it comes from "
                             "and the day it holds for")
    try:
        datetime.date.fromisoformat(e["date"])
    except ValueError:
        raise ValueError(f"{where}.date must be YYYY-MM-DD, got {e['date']!r}") from None
    note = e.get("note", "")
    if not isinstance(note, str):
        raise ValueError(f"{where}.note must be text, got {type(note).__name__}")
    return Price(float(usd), e["date"], e["source"], note)
