"""The ``balanced`` corpus: families whose shape does not name the canonical (issue 57).

A default family is a star: the canonical C and single-edit killed mutants of it, so the member
with the fewest token edits to the others (the medoid) is C. Here most families are centred on
a wrong member instead:

- **Shape.** An item's family is a star (C and its chosen single-edit distractors, as the
  default corpus chooses them) when :func:`is_star` draws it, a share :data:`STAR_SHARE` of
  the items, one over the family's size; every other family is centred on W, a killed
  single-edit mutant of C (:func:`choose_centre`), with :data:`LEAVES` leaves that are W's own
  killed single-edit mutants lying :func:`apart` from W's edit (:func:`leaf_candidates`,
  :func:`choose_leaves`), so C is one leaf of W among four, two edits from every other leaf,
  and the medoid names C about as often as chance. An item whose W has too few killed leaves
  falls back to a star.
- **Every distractor** is killed by the item's own tests (W and its leaves run in the sandbox
  like any candidate) and is one edit from a member of its family: W from C, a leaf from W.
  A leaf's ``operator``, ``line`` and edit sizes are its edit's, read in W's source.
- **Directions.** Each edit has a direction (:func:`direction`): ``+`` when the edited code
  has more tokens (or, as many, sorts after), ``-`` otherwise, so an edit and its inverse have
  opposite directions. :data:`DIRECTIONS` says per operator class what each direction writes
  and whether the table writes both (``two_way``). On every edge of a family (:func:`tree`)
  the canonical is on its nearer member's side (:func:`canonical_sides`); a star puts it on
  the ``+`` side of every guard removed, say. W (from the two-way classes first) and each leaf
  are chosen for the side a seeded fair coin draws for the canonical (:func:`wanted_side`), so
  over the corpus a wrong member holds the guard, the ``not`` or the ``+ 1`` a neighbour lacks
  about as often as C does.

Every draw is seeded by :data:`SEED` and the item id alone, and each family depends on its
own item only, so a build is deterministic and incremental like the others.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..mutation.operators import CORE_CLASSES, Mutant
from ..mutation.select import KILL_RANK, MAX_DISTRACTORS, UNUSABLE, Killed
from ..mutation.tokens import token_edits, words

BALANCED_VERSION = "1"  # bump when a family here changes; corpora record it
SEED = 57
STAR_SHARE = 1 / (1 + MAX_DISTRACTORS)  # chance: one over the family's members
LEAVES = MAX_DISTRACTORS - 1  # W's own mutants beside C

PLUS, MINUS = "+", "-"


@dataclass(frozen=True)
class Direction:
    """What an operator class's ``+`` and ``-`` edits write, and whether it writes both."""

    plus: str
    minus: str
    two_way: bool


# fmt: off
DIRECTIONS: dict[str, Direction] = {
    "off_by_one": Direction("`k` -> `k + 1`, a literal up", "`k + 1` -> `k`, a literal down", True),
    "wrong_operator": Direction(
        "an operator swapped for one sorting after (`+` -> `-`, `and` -> `or`)",
        "the reverse; a unary minus dropped (one way)", True,
    ),
    "swap_arguments": Direction("arguments into an order sorting after", "the reverse", True),
    "remove_edge_case_check": Direction(
        "(not written: the table writes no guard)", "a guard removed", False,
    ),
    "wrong_comparison": Direction("`<` -> `>`, `in` -> `not in`", "the reverse", True),
    "off_by_one_boundary": Direction(
        "`<` -> `<=`, a bound shifted by `+ 1`", "`<=` -> `<`, `+ 1` dropped", True,
    ),
    "negate_condition": Direction("`not` added", "`not` dropped", True),
    "swap_min_max": Direction("`min` -> `max`, `reverse=True` added", "the reverse", True),
    "complement_comparison": Direction("`<` -> `>=`", "`>=` -> `<`", True),
}
# fmt: on


def _draw(item_id: str, what: str, seed: int) -> float:
    """A uniform draw in [0, 1) from ``seed``, ``item_id`` and ``what`` alone."""
    digest = hashlib.sha256(f"{seed}\0{what}\0{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_star(item_id: str, seed: int = SEED) -> bool:
    """Whether the item's family stays a star centred on its canonical (:data:`STAR_SHARE`)."""
    return _draw(item_id, "shape", seed) < STAR_SHARE


def wanted_side(item_id: str, slot: str = "centre", seed: int = SEED) -> str:
    """The side of its edge the canonical should be on (:func:`canonical_sides`) for the
    family member in ``slot`` (``centre``, ``leaf0``..): a fair coin per item and slot."""
    return PLUS if _draw(item_id, slot, seed) < 0.5 else MINUS


def direction(parent: str, child: str) -> str:
    """The direction of the edit ``parent`` -> ``child``: :data:`PLUS` when ``child`` has more
    tokens (:func:`.mutation.tokens.words`), or as many sorting after (at the first token the
    edit changes); else :data:`MINUS`. Two codes' edits each way have opposite directions."""
    a, b = words(parent), words(child)
    return PLUS if (len(b), b) > (len(a), a) else MINUS


def _changed(a: list[str], b: list[str]) -> tuple[int, int]:
    """The span of ``a``'s tokens an edit to ``b`` changes: common prefix and suffix trimmed
    (an insertion is the empty span where it goes)."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return prefix, len(a) - suffix


def apart(canonical: str, centre: str, leaf: str) -> bool:
    """Whether the edit ``centre`` -> ``leaf`` lies apart from the edit ``canonical`` ->
    ``centre`` (the two spans of ``centre``'s tokens they change neither overlap nor touch), so
    the leaf is two edits from the canonical and its only way there is through the centre."""
    w = words(centre)
    start, end = _changed(w, words(canonical))
    leaf_start, leaf_end = _changed(w, words(leaf))
    return end < leaf_start or leaf_end < start


def tree(codes: Sequence[str]) -> list[tuple[int, int]]:
    """The family's edges: the minimum spanning tree of ``codes`` under token edits
    (:func:`.mutation.tokens.token_edits`), grown from ``codes[0]`` (Prim; ties to the
    earlier code), as ``(member, its neighbour nearer codes[0])``. A star's edges all end at
    ``codes[0]``; a family centred on W has one edge C-W and W's to its leaves."""
    far = {i: (token_edits(codes[0], codes[i]), 0) for i in range(1, len(codes))}
    edges = []
    while far:
        i = min(far, key=lambda j: (far[j][0], j))
        edges.append((i, far.pop(i)[1]))
        for j in far:
            d = token_edits(codes[i], codes[j])
            if d < far[j][0]:
                far[j] = (d, i)
    return edges


def canonical_sides(codes: Sequence[str], classes: Sequence[str]) -> Counter:
    """The side the canonical ``codes[0]`` is on of every edge of the family (:func:`tree`),
    counted by ``(class, side)``: ``classes[i - 1]`` the operator class of ``codes[i]``; an
    edge's side is its nearer member's (which shares the canonical's tokens at the edit):
    :data:`PLUS` when that member has the tokens the farther one lacks (a guard its mutant
    lacks), else :data:`MINUS`. What a pair of the canonical and a member shows, edit by
    edit."""
    return Counter((classes[i - 1], direction(codes[i], codes[near])) for i, near in tree(codes))


def _usable(killed: Sequence[Killed]) -> list[Killed]:
    return [k for k in killed if k.kill not in ("timeout", UNUSABLE)]


def _two_way(k: Killed) -> bool:
    return k.mutant.operator in DIRECTIONS and DIRECTIONS[k.mutant.operator].two_way


def choose_centre(
    item_id: str, canonical: str, killed: Sequence[Killed], seed: int = SEED
) -> Killed | None:
    """The family's centre W among C's killed single edits (timeouts never): a two-way class's
    edit that puts C on the item's :func:`wanted_side` first, then any two-way class's, then
    any; a wrong value before a crash, then the earliest candidate. ``None``: no killed edit."""
    wanted = wanted_side(item_id, "centre", seed)

    def key(k: Killed) -> tuple:
        turned = direction(k.mutant.code, canonical) == wanted
        return (not (_two_way(k) and turned), not _two_way(k), k.kill != "assertion", k.position)

    usable = _usable(killed)
    return min(usable, key=key) if usable else None


def leaf_candidates(mutants: Sequence[Mutant], canonical: str, centre: str) -> list[Mutant]:
    """W's single edits (``mutants``) that lie :func:`apart` from the edit C -> W (so never C
    again, nor a mutant of C that overlaps W's edit, as the guard W's edit sits in removed),
    but any repeating one before token for token: the leaves' candidates."""
    seen = set()
    out = []
    for m in mutants:
        key = tuple(words(m.code))
        if key not in seen and apart(canonical, centre, m.code):
            seen.add(key)
            out.append(m)
    return out


def choose_leaves(
    item_id: str, centre: str, killed: Sequence[Killed], seed: int = SEED
) -> list[Killed]:
    """:data:`LEAVES` of W's killed single edits (fewer when fewer are killed; timeouts never),
    one slot at a time by the smallest key: a class not yet chosen for the family, then an edit
    that puts C (which shares W's tokens there) on the slot's :func:`wanted_side`, a core class,
    a wrong value before a crash, the earliest candidate. Nothing corpus-wide: each family
    depends on its own item only."""
    chosen: list[Killed] = []
    left = _usable(killed)
    for slot in range(min(LEAVES, len(left))):
        wanted = wanted_side(item_id, f"leaf{slot}", seed)
        used = Counter(k.mutant.operator for k in chosen)
        best = min(left, key=lambda k: _leaf_key(k, centre, wanted, used))
        left.remove(best)
        chosen.append(best)
    return chosen


def _leaf_key(k: Killed, centre: str, wanted: str, used: Counter) -> tuple:
    turned = direction(k.mutant.code, centre) == wanted
    core = k.mutant.operator in CORE_CLASSES
    return (used[k.mutant.operator], not turned, not core, KILL_RANK[k.kill], k.position)


@dataclass(frozen=True)
class Family:
    """An item's balanced family: ``centre`` None for a star (the distractors are chosen from
    C's candidates as usual), else W and its ``leaves``."""

    centre: Mutant | None
    leaves: tuple[Mutant, ...] = ()

    @property
    def candidates(self) -> list[Mutant]:
        """The candidates of a W-centred family, W first: they are its distractors."""
        return [self.centre, *self.leaves] if self.centre else []


def centred(item_id: str, centre: Killed | None, leaf_kills: Sequence[Killed]) -> Family:
    """The item's family centred on ``centre`` with its chosen leaves, or a star when there
    is no centre or too few killed leaves."""
    if centre is None:
        return Family(None)
    leaves = choose_leaves(item_id, centre.mutant.code, leaf_kills)
    if len(leaves) < LEAVES:
        return Family(None)
    return Family(centre.mutant, tuple(k.mutant for k in leaves))


def engine() -> dict:
    """What a balanced corpus records of its construction (a change makes it stale)."""
    return {"balanced": BALANCED_VERSION, "seed": SEED, "star_share": round(STAR_SHARE, 6)}
