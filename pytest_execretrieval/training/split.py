"""Training splits: which items a fine-tuned model learns from and which it is evaluated on.

A split partitions the items into ``train`` and ``held_out``; no item is in both, by
construction (``held_out`` is always the complement of ``train`` within the items given).

* :func:`domain_folds`: k-fold over whole domains (sorted by name, dealt round-robin into ``k``
  folds): fold ``i`` holds out its domains and trains on all the others, so a model is evaluated
  on domains whose queries and code it never saw in any form;
* :func:`item_list_split`: the items named in a file (one id a line, ``#`` comments) train;
* :func:`all_split`: every item trains (evaluate on another item set).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..corpus.items import BenchmarkItem


class SplitError(ValueError):
    """A split cannot be made: unknown item ids in a list, a bad fold count, no items."""


@dataclass(frozen=True)
class Split:
    """``name`` (e.g. ``domains-2-of-5``), the item ids on each side (sorted), and the domains held
    out entirely (domain splits only)."""

    name: str
    train: tuple[str, ...]
    held_out: tuple[str, ...]
    held_out_domains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        overlap = set(self.train) & set(self.held_out)
        if overlap:  # unreachable through the constructors below; a split read from a card
            raise SplitError(
                f"split {self.name}: items both trained and held out: {sorted(overlap)[:5]}"
            )

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "train": list(self.train),
            "held_out": list(self.held_out),
            "held_out_domains": list(self.held_out_domains),
        }

    @classmethod
    def from_json(cls, data: dict) -> Split:
        return cls(
            data["name"],
            tuple(data["train"]),
            tuple(data["held_out"]),
            tuple(data.get("held_out_domains", ())),
        )


def _partition(
    name: str,
    items: Sequence[BenchmarkItem],
    train: Iterable[str],
    held_out_domains: Sequence[str] = (),
) -> Split:
    train = set(train)
    ids = sorted(item.id for item in items)
    return Split(
        name,
        tuple(i for i in ids if i in train),
        tuple(i for i in ids if i not in train),
        tuple(held_out_domains),
    )


def domain_folds(items: Sequence[BenchmarkItem], k: int) -> list[Split]:
    """``k`` domain folds; each domain is held out by exactly one fold."""
    domains = sorted({item.domain for item in items})
    if not 2 <= k <= len(domains):
        raise SplitError(
            f"--folds {k}: a domain k-fold needs 2 <= k <= {len(domains)} "
            f"(the number of domains among the items)"
        )
    folds = []
    for fold in range(k):
        held = domains[fold::k]
        train = [item.id for item in items if item.domain not in held]
        folds.append(_partition(f"domains-{fold + 1}-of-{k}", items, train, held))
    return folds


def all_split(items: Sequence[BenchmarkItem]) -> Split:
    if not items:
        raise SplitError("no items to train on")
    return _partition("all", items, [item.id for item in items])


def item_list_split(items: Sequence[BenchmarkItem], path: Path) -> Split:
    """The items listed in ``path`` train, the others are held out; an id that is not an item
    here is an error (a typo would otherwise silently move an item to the held-out side)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SplitError(f"--split {path}: {exc}") from None
    listed = [line.split("#", 1)[0].strip() for line in lines]
    listed = [x for x in listed if x]
    known = {item.id for item in items}
    unknown = sorted(set(listed) - known)
    if unknown:
        raise SplitError(
            f"--split {path}: {len(unknown)} id(s) are not items here: {', '.join(unknown[:5])}"
        )
    if not listed:
        raise SplitError(f"--split {path}: lists no item ids")
    return _partition(f"file:{Path(path).name}", items, listed)


def make_splits(items: Sequence[BenchmarkItem], spec: str, folds: int) -> list[Split]:
    """``spec``: ``domains`` (``folds`` splits), ``all``, or the path of an item-list file."""
    if spec == "domains":
        return domain_folds(items, folds)
    if spec == "all":
        return [all_split(items)]
    return [item_list_split(items, Path(spec))]
