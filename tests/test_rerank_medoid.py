"""``medoid``, the query-blind control: the centre of a star of single-edit mutants is its
canonical; a pair has no centre (a tie, so the first stage decides); a candidate without a near
clone goes below the clones; no clone at all leaves the first stage's order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from test_rerank_clones import CANONICAL, MUTANT, OTHER_MUTANT, UNRELATED, order, query

from pytest_execretrieval.mutation.tokens import token_edits
from pytest_execretrieval.ranking.rerank import get_reranker
from pytest_execretrieval.ranking.rerank.medoid import NO_CLONE, Medoid, centrality


def test_token_edits_count_the_longer_side_of_each_differing_run():
    assert token_edits(CANONICAL, CANONICAL) == 0
    assert token_edits(CANONICAL, MUTANT) == 1  # >= -> >
    assert token_edits("return n", "return n + 1") == 2
    assert token_edits("a = 1\nb = 2", "a = 3\nb = 4") == 2


def test_the_centre_of_a_star_goes_first_whatever_the_first_stage_said():
    third = CANONICAL.replace("range(len(xs))", "range(len(xs) - 1)")
    (answer,) = Medoid().rerank("minilm", [query(MUTANT, OTHER_MUTANT, third, CANONICAL)])
    assert order(answer)[0] == 3
    assert answer.fallback is None


def test_a_pair_has_no_centre_and_an_unrelated_function_goes_below_it():
    (answer,) = Medoid().rerank("minilm", [query(UNRELATED, MUTANT, CANONICAL)])
    assert answer.scores[1] == answer.scores[2] == -1.0
    assert answer.scores[0] < -1.0
    assert order(answer) == [1, 2, 0]  # the tie keeps the first stage's order


def test_no_near_clone_keeps_the_first_stage_order():
    (answer,) = Medoid().rerank("minilm", [query(UNRELATED, CANONICAL)])
    assert answer.fallback == NO_CLONE and set(answer.scores) == {0.0}


def test_registered_alone_and_within_the_rank_ones_clones():
    assert get_reranker("medoid").invocation()["name"] == "medoid"
    within = get_reranker("clones:medoid")
    assert within.name == "clones:medoid"
    (answer,) = within.rerank("minilm", [query(MUTANT, UNRELATED, OTHER_MUTANT, CANONICAL)])
    assert order(answer)[0] == 3


BASE = [f"w{i}" for i in range(30)]


@given(st.sets(st.integers(0, 14), min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_the_canonical_is_the_unique_medoid_of_any_star_of_one_token_mutants(spots, rnd):
    """Mutants each replace one token (at even positions, never two neighbours) by a token the
    code lacks: each differs from the canonical by 1 and from another mutant by 2."""
    mutants = []
    for k, spot in enumerate(sorted(spots)):
        words = list(BASE)
        words[2 * spot] = f"z{k}"
        mutants.append(" ".join(words))
    codes = [" ".join(BASE), *mutants]
    rnd.shuffle(codes)
    found = centrality(codes)
    top = max(s for s in found if s is not None)
    assert [c for c, s in zip(codes, found) if s == top] == [" ".join(BASE)]
