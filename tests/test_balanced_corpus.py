"""The balanced corpus (`execretrieval build --balanced`, `--execretrieval-balanced`): most
families centred on a wrong member, every distractor killed and one edit from a member, the
same corpus from the same seed, and `build --check` for it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from corpus_builds import corpus_files
from hypothesis import given
from hypothesis import strategies as st

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.balanced import (
    BALANCED_VERSION,
    DIRECTIONS,
    LEAVES,
    MINUS,
    PLUS,
    STAR_SHARE,
    apart,
    canonical_sides,
    choose_centre,
    choose_leaves,
    direction,
    is_star,
    leaf_candidates,
    tree,
    wanted_side,
)
from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import CorpusVariant, Snippet, corpus_dir, read_corpus
from pytest_execretrieval.execution.sandbox import SuiteResult
from pytest_execretrieval.mutation.operators import OPERATOR_CLASSES, Mutant
from pytest_execretrieval.mutation.select import MAX_DISTRACTORS, Killed
from pytest_execretrieval.mutation.tokens import token_edits, words

DATA = Path(__file__).parent / "data" / "items"
BALANCED = CorpusVariant(balanced=True)
EDITED = "arrays_lists/last_index_of"
DROPPED = '  "assert last_index_of([5, 6, 7], 6) == 1",\n'


@pytest.fixture(scope="module")
def built(tmp_path_factory, cache_args) -> Path:
    """A copy of the test items with a fully built balanced corpus."""
    target = tmp_path_factory.mktemp("built") / "items"
    shutil.copytree(DATA, target)
    assert cli.main(["build", str(target), "--balanced", "--full", *cache_args]) == 0
    return target


def families(items: Path) -> dict[str, tuple[Snippet, list[Snippet]]]:
    """Per query, its canonical and its distractors (snippet-id order)."""
    corpus = read_corpus(items, engine(BALANCED), corpus_dir(items, BALANCED))
    out: dict[str, tuple[Snippet, list[Snippet]]] = {}
    for query, own in sorted(corpus.by_query().items()):
        own = sorted(own, key=lambda s: s.snippet_id)
        canonical = next(s for s in own if s.kind == "canonical")
        out[query] = (canonical, [s for s in own if s.kind == "distractor"])
    return out


def test_the_balanced_row_resolves() -> None:
    variant = CorpusVariant.of("balanced")
    assert variant == BALANCED and variant.kind == "balanced" and variant.k == 1
    assert variant.flags == ("--balanced",)
    assert corpus_dir(Path("/items"), variant) == Path("/items/balanced")
    assert engine(variant)["balanced"] == BALANCED_VERSION
    with pytest.raises(ValueError, match="select different corpora"):
        CorpusVariant(families=True, balanced=True)


def medoids(codes: list[str]) -> list[int]:
    """The members with the fewest token edits to the others, summed."""
    sums = [sum(token_edits(a, b) for b in codes) for a in codes]
    return [i for i, total in enumerate(sums) if total == min(sums)]


def test_a_wrong_centred_family_has_its_centre_as_medoid(built) -> None:
    """A family centred on W: W is a single-edit mutant of the canonical, its only neighbour
    and the unique medoid, and every leaf is a single-edit mutant of W; a star's distractors
    are the canonical's single edits and its medoid is the canonical."""
    items = {item.id: item for item in load_items(built)[0]}
    shapes = []
    for query, (canonical, distractors) in families(built).items():
        item = items[query]
        assert len(distractors) == MAX_DISTRACTORS
        codes = [canonical.code, *(d.code for d in distractors)]
        own = {m.code for m in item.lang.mutants(canonical.code, item.entry_point)}
        near = [i for i, parent in tree(codes) if parent == 0]
        if set(codes[1:]) <= own:  # a star: drawn, or fallen back
            assert medoids(codes) == [0] and len(near) == MAX_DISTRACTORS
            shapes.append("star")
            continue
        assert not is_star(query)
        assert len(near) == 1 and medoids(codes) == near, query
        centre = codes[near[0]]
        assert centre in own
        leaves = [code for i, code in enumerate(codes[1:], 1) if i != near[0]]
        of_centre = {m.code for m in item.lang.mutants(centre, item.entry_point)}
        assert len(leaves) == LEAVES and set(leaves) <= of_centre
        assert all(apart(canonical.code, centre, leaf) for leaf in leaves)
        shapes.append("centred")
    assert "centred" in shapes and "star" in shapes  # the fixture holds both shapes


def test_every_distractor_is_killed_by_its_own_tests(built) -> None:
    for canonical, distractors in families(built).values():
        assert not canonical.failing_tests
        for d in distractors:
            assert d.failing_tests and d.kill in ("assertion", "exception")
            assert d.operator in OPERATOR_CLASSES


def test_the_direction_balance_is_counted_on_every_edge(built) -> None:
    """Every edge of a family counted once, on the canonical's side of it; a star's edges all
    end at the canonical, a centred family's one."""
    for canonical, distractors in families(built).values():
        codes = [canonical.code, *(d.code for d in distractors)]
        sides = canonical_sides(codes, [d.operator for d in distractors])
        assert sum(sides.values()) == MAX_DISTRACTORS
        assert {side for _, side in sides} <= {PLUS, MINUS}
        assert sum(parent == 0 for _, parent in tree(codes)) in (1, MAX_DISTRACTORS)


def test_the_same_seed_builds_the_same_corpus(built, tmp_path) -> None:
    """From scratch, with a cold outcome cache: byte for byte the same files."""
    again = tmp_path / "items"
    shutil.copytree(DATA, again)
    fresh = ["--cache-dir", str(tmp_path / "cold")]
    assert cli.main(["build", str(again), "--balanced", "--full", *fresh]) == 0
    assert corpus_files(again / "balanced") == corpus_files(built / "balanced")


def test_balanced_check_and_incremental_build(built, tmp_path, cache_args, capsys) -> None:
    capsys.readouterr()
    assert cli.main(["build", str(built), "--balanced", "--check"]) == 0
    assert corpus_files(built) == corpus_files(DATA)  # the default corpus is left as committed
    meta = json.loads((built / "balanced" / "manifest.json").read_text())
    assert meta["engine"] == engine(BALANCED)
    edited, full = tmp_path / "edited", tmp_path / "full"
    for target in (edited, full):
        shutil.copytree(built, target)
        path = target / f"{EDITED}.toml"
        path.write_text(path.read_text().replace(DROPPED, ""))
    capsys.readouterr()
    assert cli.main(["build", str(edited), "--balanced", "--check"]) == 1
    assert f"  {EDITED}" in capsys.readouterr().out
    assert cli.main(["build", str(edited), "--balanced", *cache_args]) == 0
    assert "reused 3 items" in capsys.readouterr().out
    assert cli.main(["build", str(full), "--balanced", "--full", *cache_args]) == 0
    assert corpus_files(edited / "balanced") == corpus_files(full / "balanced")


def test_the_draws_are_seeded_by_the_item_alone() -> None:
    ids = [f"domain/item_{i}" for i in range(2000)]
    stars = sum(map(is_star, ids)) / len(ids)
    assert abs(stars - STAR_SHARE) < 0.03
    assert [is_star(i, seed=1) for i in ids] != [is_star(i) for i in ids]
    assert abs(sum(wanted_side(i) == PLUS for i in ids) / len(ids) - 0.5) < 0.04


@given(st.text(max_size=30), st.text(max_size=30))
def test_an_edit_and_its_inverse_have_opposite_directions(a, b) -> None:
    if words(a) != words(b):
        assert {direction(a, b), direction(b, a)} == {PLUS, MINUS}


def test_the_direction_table_names_every_class() -> None:
    assert set(DIRECTIONS) == set(OPERATOR_CLASSES)
    assert not DIRECTIONS["remove_edge_case_check"].two_way
    assert direction("if x:\n    return 0\nreturn x", "return x") == MINUS  # a guard removed


def _killed(position: int, operator: str, code: str, kill: str = "assertion") -> Killed:
    mutant = Mutant(operator, 1, code, "", 1, 1)
    return Killed(position, mutant, SuiteResult(("fail",), False), kill)


def test_the_centre_is_a_two_way_edit_putting_the_canonical_on_the_drawn_side() -> None:
    canonical = "def f(a, b):\n    return a < b\n"
    guard = _killed(0, "remove_edge_case_check", "def f(a, b):\n    return 0\n")
    up = _killed(1, "off_by_one_boundary", "def f(a, b):\n    return a <= b\n")
    down = _killed(2, "negate_condition", "def f(a, b):\n    return a\n")
    slow = _killed(3, "wrong_comparison", "def f(a, b):\n    return a > b\n", "timeout")
    plus = next(i for i in (f"d/i{n}" for n in range(99)) if wanted_side(i) == PLUS)
    minus = next(i for i in (f"d/i{n}" for n in range(99)) if wanted_side(i) == MINUS)
    killed = [guard, up, down, slow]
    assert choose_centre(plus, canonical, killed) is down  # C keeps the tokens W drops
    assert choose_centre(minus, canonical, killed) is up
    assert choose_centre(plus, canonical, [guard, slow]) is guard  # a one-way edit at worst
    assert choose_centre(plus, canonical, [slow]) is None  # never a timeout


def test_leaves_take_distinct_classes_then_the_drawn_sides() -> None:
    centre = "return a < b + c"
    drop = _killed(0, "off_by_one", "return a < b")  # C keeps `+ c`: C on the + side
    add = _killed(1, "off_by_one", "return a < b + c + 1")  # C on the - side
    other = _killed(2, "swap_arguments", "return b < a + c", "exception")
    item = next(i for i in (f"d/i{n}" for n in range(99)) if wanted_side(i, "leaf0") == MINUS)
    chosen = choose_leaves(item, centre, [drop, add, other])
    assert chosen[0] is add and chosen[1] is other and chosen[2] is drop
    assert choose_leaves(item, centre, [_killed(0, "off_by_one", "x", "timeout")]) == []


def test_a_leaf_lies_apart_from_the_centres_edit() -> None:
    """Never the canonical again, nor an edit touching W's (the guard W's edit sits in
    removed: a mutant of the canonical too), nor a repeat."""
    canonical = "if n < 1:\n    raise E\nreturn f(a, b)"
    centre = "if not (n < 1):\n    raise E\nreturn f(a, b)"
    mutants = [
        Mutant("negate_condition", 1, canonical, "", 1, 1),
        Mutant("remove_edge_case_check", 1, "return f(a, b)", "", 1, 1),
        Mutant("wrong_comparison", 1, "if not (n > 1):\n    raise E\nreturn f(a, b)", "", 1, 1),
        Mutant("swap_arguments", 1, "if not (n < 1):\n    raise E\nreturn f(b, a)", "", 1, 1),
        Mutant("off_by_one", 1, "if not (n < 1):\n    raise E\nreturn f(b, a)", "", 1, 1),
    ]
    assert [m.operator for m in leaf_candidates(mutants, canonical, centre)] == ["swap_arguments"]


def test_the_tree_of_a_centred_family_runs_through_its_centre() -> None:
    codes = ["f(a, b, c)", "f(a, b, d)", "f(x, b, d)", "f(a, y, d)", "g(a, b, d)"]
    assert sorted(tree(codes)) == [(1, 0), (2, 1), (3, 1), (4, 1)]
    assert canonical_sides(codes, ["w", "l", "l", "l"]) == {("w", MINUS): 1, ("l", MINUS): 3}
