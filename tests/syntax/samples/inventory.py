"""Inventory bookkeeping for a small warehouse service."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

LOW_STOCK_THRESHOLD = 5
log = logging.getLogger(__name__)

DEFAULT_BINS = {
    "A1": 120,
    "B2": 80,
}


@dataclass
class Item:
    """One stock-keeping unit and how many are on hand."""

    sku: str
    name: str
    quantity: int = 0
    tags: list[str] = field(default_factory=list)

    def is_low(self) -> bool:
        # Items at or under the threshold need reordering.
        return self.quantity <= LOW_STOCK_THRESHOLD


class Inventory:
    def __init__(self, path: Path):
        self.path = path
        self.items: dict[str, Item] = {}

    def load(self) -> None:
        with open(self.path, encoding="utf-8") as f:
            for row in json.load(f):
                item = Item(**row)
                self.items[item.sku] = item
        log.info("loaded %d items", len(self.items))

    def restock(self, sku: str, amount: int) -> Item:
        try:
            item = self.items[sku]
        except KeyError:
            raise ValueError(f"unknown sku {sku!r}") from None
        if amount <= 0:
            raise ValueError("amount must be positive")
        elif amount > 1000:
            log.warning("large restock of %s", sku)
        item.quantity += amount
        return item

    def low_stock(self) -> list[Item]:
        return sorted(
            (item for item in self.items.values() if item.is_low()),
            key=lambda item: item.quantity,
        )


def summarize(inventory: Inventory) -> str:
    lines = [f"{item.sku}: {item.quantity}" for item in inventory.low_stock()]
    return "\n".join(lines) or "all stocked"
