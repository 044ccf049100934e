"""``clones:NAME``: the wrapped reranker decides only between the near clones of the first
stage's rank 1; the clones go first in its order, the rest keep the first stage's order, a rank 1
without a clone leaves the list alone, and the wrapped reranker's training split is still seen
by the refusal to score training items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_execretrieval.corpus.items import BenchmarkItem
from pytest_execretrieval.orchestration import SetupError, refuse_training_items
from pytest_execretrieval.ranking.rerank import (
    Candidate,
    Reranked,
    RerankerContext,
    RerankQuery,
    get_reranker,
)
from pytest_execretrieval.ranking.rerank.clones import NO_CLONE, WithinClones

CANONICAL = "def first_at_least(xs, t):\n    for i in range(len(xs)):\n        if xs[i] >= t:\n            return i\n    return -1\n"  # noqa: E501
MUTANT = CANONICAL.replace(">=", ">")
OTHER_MUTANT = CANONICAL.replace("return -1", "return 0")
UNRELATED = "def mean(values):\n    return sum(values) / len(values)\n"
ITEM = BenchmarkItem(
    "arrays_lists/first_at_least",
    Path("first_at_least.toml"),
    "arrays_lists",
    "Index of the first element at least t, or -1.",
    "first_at_least",
    CANONICAL,
    ("assert first_at_least([1, 3], 2) == 1",),
)


class ByLength:
    """Scores a candidate by its code's length: a reranker whose order is easy to predict;
    records what it was asked."""

    name = "by-length"

    def __init__(self, training: dict | None = None):
        self.asked: list[list[str]] = []
        self.training = training

    def invocation(self) -> dict:
        return {"name": self.name, **({"training": self.training} if self.training else {})}

    def rerank(self, first_stage, queries):
        self.asked += [[c.code for c in q.candidates] for q in queries]
        return [Reranked(tuple(float(len(c.code)) for c in q.candidates)) for q in queries]

    def close(self):
        pass


def query(*codes: str) -> RerankQuery:
    return RerankQuery(
        ITEM, tuple(Candidate(f"s{i}", c, i + 1, 1.0 - i / 10) for i, c in enumerate(codes))
    )


def order(answer: Reranked) -> list[int]:
    """Candidate positions as the pipeline lists them (reranker score, then first stage)."""
    return sorted(range(len(answer.scores)), key=lambda j: (-answer.scores[j], j))


def test_only_the_rank_ones_clones_are_reordered_and_go_first():
    inner = ByLength()
    # rank 1 the mutant; an unrelated function at rank 2; the canonical (longer by one) at 3
    (answer,) = WithinClones(inner).rerank("minilm", [query(MUTANT, UNRELATED, CANONICAL)])
    assert inner.asked == [[MUTANT, CANONICAL]]
    assert order(answer) == [2, 0, 1]
    assert answer.detail == {"clones": 2} and answer.fallback is None


def test_the_rest_keep_the_first_stage_order_below_the_clones():
    codes = (CANONICAL, UNRELATED, MUTANT, UNRELATED.replace("mean", "avg"), OTHER_MUTANT)
    (answer,) = WithinClones(ByLength()).rerank("minilm", [query(*codes)])
    # the two mutants are one character shorter than the canonical and tie: first stage decides
    assert order(answer) == [0, 2, 4, 1, 3]


def test_a_rank_one_without_clones_is_left_alone_and_the_reranker_not_asked():
    inner = ByLength()
    answers = WithinClones(inner).rerank(
        "minilm", [query(UNRELATED, CANONICAL, MUTANT), query(CANONICAL, MUTANT)]
    )
    assert inner.asked == [[CANONICAL, MUTANT]]
    assert answers[0].fallback == NO_CLONE and order(answers[0]) == [0, 1, 2]
    assert order(answers[1]) == [0, 1]


def test_the_wrapped_rerankers_training_split_is_refused_on_its_training_items():
    split = {"name": "domains-1-of-5", "train": [ITEM.id], "held_out_domains": ["graphs_trees"]}
    wrapped = WithinClones(ByLength({"split": split}))
    assert wrapped.invocation()["reranker"]["name"] == "by-length"
    with pytest.raises(SetupError, match="trained on 1 of the 1"):
        refuse_training_items({"clones:by-length": wrapped}, [ITEM.id], "--execretrieval-rerank")
    refuse_training_items({"clones:by-length": wrapped}, ["graphs_trees/x"])


def test_the_registry_wraps_any_reranker_by_name(tmp_path):
    # the files a ce:DIR is checked for before it loads (nothing here loads it)
    config = {"model_type": "bert", "architectures": ["BertForSequenceClassification"]}
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_labels": 1}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    reranker = get_reranker(f"clones:ce:{tmp_path}", RerankerContext())
    assert isinstance(reranker, WithinClones)
    assert reranker.name == f"clones:ce:{tmp_path}"
    assert reranker.invocation()["reranker"]["view"] == "code"
