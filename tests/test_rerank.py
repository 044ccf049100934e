"""The rerank stage as a library: exec-consensus (inputs, fingerprints, agreement), the pipeline's
ordering and tie counting, reciprocal-rank fusion, the CrossEncoder, the registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_bert import tiny_bert

from pytest_execretrieval.corpus.items import BenchmarkItem
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.ranking.benchmark import BenchmarkRun, Hit, QueryResult
from pytest_execretrieval.ranking.rerank import (
    REGISTRY,
    Candidate,
    Reranked,
    RerankerContext,
    RerankerError,
    RerankQuery,
    get_reranker,
)
from pytest_execretrieval.ranking.rerank.consensus import (
    BITS,
    HYPOTHESIS_INPUTS,
    agreement,
    arguments_from_tests,
    fingerprints,
    hypothesis_arguments,
)
from pytest_execretrieval.ranking.rerank.pipeline import reorder
from pytest_execretrieval.reporting.report import report_row
from pytest_execretrieval.scoring.metrics import row_metrics

CANONICAL = "def clamp_add(a, b, lo, hi):\n    return max(lo, min(hi, a + b))\n"
ALTERNATIVE = "def clamp_add(a, b, lo, hi):\n    s = a + b\n    return lo if s < lo else hi if s > hi else s\n"  # noqa: E501
MUTANT = "def clamp_add(a, b, lo, hi):\n    return max(lo, min(hi, a - b))\n"
OTHER_MUTANT = "def clamp_add(a, b, lo, hi):\n    return min(lo, min(hi, a + b))\n"
NOT_CALLABLE = "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n"
TESTS = (
    "assert clamp_add(1, 2, 0, 10) == 3",
    "assert clamp_add(8, 5, 0, 10) == 10",
    "assert clamp_add(-4, -3, -5, 5) == -5",
    "assert raises(TypeError, clamp_add, 'a', 1, 0, 2)",
    "assert all(clamp_add(x, 0, 0, 3) <= 3 for x in range(9))",
)


def make_item(tests=TESTS, entry_point="clamp_add", canonical=CANONICAL) -> BenchmarkItem:
    return BenchmarkItem(
        "math_number_theory/clamp_add",
        Path("clamp_add.toml"),
        "math_number_theory",
        "Add two integers and clamp the sum to [lo, hi].",
        entry_point,
        canonical,
        tuple(tests),
    )


def candidates(*codes: str) -> tuple[Candidate, ...]:
    return tuple(Candidate(f"s{i}", code, i + 1, 1.0 - i / 10) for i, code in enumerate(codes))


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with SuiteRunner(cache_dir=tmp_path_factory.mktemp("cache")) as r:
        yield r


# -- inputs -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "test, expected",
    [
        ("assert f(1, [2, 3]) == 99", ["1, [2, 3]"]),
        ("assert f(x=1) == f(2)", ["x=1", "2"]),
        ("assert raises(ValueError, f, -1, k=2)", ["-1, k=2"]),
        ("assert sorted(f('ab')) == ['a', 'b']", ["'ab'"]),
        ("assert all(f(x) for x in range(3))", []),  # x is bound by the test itself
        ("assert (lambda y: f(y))(3) == 1", []),
        ("assert f(lambda x: -(x - 7) ** 2, 0, 9) == 7", ["lambda x: -(x - 7) ** 2, 0, 9"]),
        ("assert g(1) == 2", []),  # not the entry point
        ("assert f() is None", [""]),
    ],
)
def test_arguments_come_from_calls_never_from_expected_values(test, expected):
    assert arguments_from_tests("f", [test]) == expected


def test_arguments_are_deduplicated_in_order():
    tests = ["assert f(2) == 1", "assert f(1) == 5", "assert f(2) != 7"]
    assert arguments_from_tests("f", tests) == ["2", "1"]


def test_hypothesis_inputs_come_from_annotations_only():
    typed = "def f(a: int, b: list[int]):\n    return a\n"
    drawn = hypothesis_arguments("f", ["def f(a, b):\n    return a\n", typed])
    assert len(drawn) == HYPOTHESIS_INPUTS and len(set(drawn)) == len(drawn)
    assert drawn == hypothesis_arguments("f", [typed])  # derandomized: the same every time
    values = [eval(f"(lambda a, b: (a, b))({args})") for args in drawn]  # noqa: S307
    assert all(isinstance(a, int) and isinstance(b, list) for a, b in values)
    assert hypothesis_arguments("f", ["def f(a, b):\n    return a\n"]) == []


# -- fingerprints and agreement -----------------------------------------------------------------
def test_fingerprints_hash_canonical_values_and_reject_anything_else():
    values = [
        ("value", {3, 1}),
        ("value", {1, 3}),
        ("raises", "ValueError"),
        ("error", "SystemExit"),
        ("unsupported", "x.Box"),
        ("raises", "UnsupportedValue"),
        None,
    ]
    prints = fingerprints(values, 8)
    assert prints[0] == prints[1] is not None and prints[2] not in (None, prints[0])
    assert prints[3] is None and prints[6] is None and prints[7] is None  # missing: no output
    assert prints[4] == prints[5] and all(0 <= p < 1 << BITS for p in prints if p is not None)


def test_agreement_counts_matching_outputs_over_pairs_and_inputs():
    outputs = [[1, 2, 3], [1, 2, 3], [1, 9, 3], [None, None, None]]
    scores = agreement(outputs)
    assert scores[0] == scores[1] == pytest.approx((3 + 2) / 9)
    assert scores[2] == pytest.approx(4 / 9)
    assert scores[3] == 0.0  # no output agrees with nothing, not even with another None
    assert agreement([[1, 2]]) == [0.0]


# -- exec-consensus end to end (sandbox) --------------------------------------------------------
def test_consensus_puts_the_agreeing_majority_first_and_uncallables_last(runner):
    reranker = get_reranker("exec-consensus", RerankerContext(runner=runner))
    assert reranker.name == "exec-consensus:tests"
    cands = candidates(MUTANT, NOT_CALLABLE, CANONICAL, OTHER_MUTANT, ALTERNATIVE)
    [answer] = reranker.rerank("bm25", [RerankQuery(make_item(), cands)])
    s = answer.scores
    assert answer.fallback is None
    assert s[2] == s[4] > max(s[0], s[3])  # canonical and alternative agree everywhere
    assert s[1] == -1.0  # another query's function cannot be called
    assert answer.detail["inputs"] == 4 and answer.detail["callable"] == 4
    assert answer.detail["top_group"] == 2


def test_consensus_outputs_are_compared_canonically(runner):
    """Sets and dicts in any order, floats within 9 digits and the same exception type are the
    same output; a different value is not. (An iterator cannot leave the sandbox: its typed
    codec carries plain data only, so such a result is an unsupported value.)"""
    item = make_item(["assert f(3) == 0"], "f", "def f(n):\n    return n\n")
    codes = [
        "def f(n):\n    return ({'b', 'a', str(n)}, {2: 1, 1: 2}, 0.1 + 0.2, [n])\n",
        "def f(n):\n    return ({str(n), 'a', 'b'}, {1: 2, 2: 1}, 0.3, list((n,)))\n",
        "def f(n):\n    return ({'a', 'b'}, {1: 2, 2: 1}, 0.3, [n])\n",
        "def f(n):\n    raise ValueError(n)\n",
        "def f(n):\n    raise ValueError('other message')\n",
    ]
    reranker = get_reranker("exec-consensus", RerankerContext(runner=runner))
    [answer] = reranker.rerank("x", [RerankQuery(item, candidates(*codes))])
    assert answer.scores == (0.25, 0.25, 0.0, 0.25, 0.25)


def test_consensus_falls_back_to_the_first_stage_without_inputs(runner):
    reranker = get_reranker("exec-consensus:hypothesis", RerankerContext(runner=runner))
    [untyped] = reranker.rerank("x", [RerankQuery(make_item(), candidates(CANONICAL, MUTANT))])
    assert untyped.scores == (0.0, 0.0) and "annotations" in untyped.fallback
    tests_source = get_reranker("exec-consensus:tests", RerankerContext(runner=runner))
    no_calls = make_item(["assert True"])
    [answer] = tests_source.rerank("x", [RerankQuery(no_calls, candidates(CANONICAL, MUTANT))])
    assert answer.scores == (0.0, 0.0) and answer.fallback.startswith("no inputs")
    lonely = RerankQuery(make_item(), candidates(CANONICAL, NOT_CALLABLE))
    [alone] = tests_source.rerank("x", [lonely])
    assert alone.fallback == "fewer than two callable candidates"


def test_hypothesis_consensus_separates_a_typed_mutant(runner):
    typed = CANONICAL.replace("(a, b, lo, hi)", "(a: int, b: int, lo: int, hi: int)")
    mutant = MUTANT.replace("(a, b, lo, hi)", "(a: int, b: int, lo: int, hi: int)")
    alt = "def clamp_add(a: int, b: int, lo: int, hi: int):\n    return max(lo, min(hi, b + a))\n"
    reranker = get_reranker("exec-consensus:hypothesis", RerankerContext(runner=runner))
    [answer] = reranker.rerank(
        "x", [RerankQuery(make_item(["assert True"]), candidates(mutant, typed, alt))]
    )
    assert answer.fallback is None and answer.detail["inputs"] == HYPOTHESIS_INPUTS
    assert answer.scores[1] == answer.scores[2] > answer.scores[0]


def test_unknown_source_and_missing_runner_are_errors():
    with pytest.raises(RerankerError, match="unknown input source 'fuzz'"):
        get_reranker("exec-consensus:fuzz", RerankerContext(runner=None))
    with pytest.raises(RerankerError, match="needs a SuiteRunner"):
        get_reranker("exec-consensus", RerankerContext())


# -- the pipeline's order and ties --------------------------------------------------------------
def hit(rank, score, passes, kind="distractor", sid=None, qid="q/a"):
    return Hit(
        rank, sid or f"s{rank}", kind, None if kind == "canonical" else "op", qid, score, passes
    )


def first_stage(hits, tail, canonical_rank, span) -> QueryResult:
    return QueryResult(
        "q/a",
        "strings",
        hits[0].passes,
        canonical_rank,
        0.5,
        tuple(hits),
        (),
        rank1_tie={"size": 1, "passing": int(hits[0].passes)},
        tail_tie=tail,
        canonical_tie=span,
    )


def test_reranked_order_breaks_reranker_ties_by_first_stage_and_counts_joint_ties():
    hits = [
        hit(1, 0.9, False),
        hit(2, 0.8, False),
        hit(3, 0.8, True, "canonical"),
        hit(4, 0.7, False),
        *(hit(r, 0.1 * (10 - r), False) for r in range(5, 11)),
    ]
    r = first_stage(hits, {"size": 1, "passing": 0}, 3, {"first": 2, "last": 3})
    # The reranker ties ranks 2 and 3 (which the first stage tied too) above everything else.
    scores = [0.2, 0.7, 0.7, 0.7, *([0.0] * 6)]
    new, rank1, tail, span, rank = reorder(r, scores, 10)
    assert [h.snippet_id for h in new[:4]] == ["s2", "s3", "s4", "s1"]
    assert rank1 == {"size": 2, "passing": 1}  # s2 and s3 tie in both stages
    assert span == {"first": 1, "last": 2} and rank == 2
    assert tail == {"size": 1, "passing": 0}  # the list was reranked whole: nothing below ties
    row = report_row(
        QueryResult("q/a", "strings", False, rank, 0.5, tuple(new), (), (), {}, rank1, tail, span)
    )
    assert row["top"][0]["tie_key"] == [1, 0.7, 0.8]
    metrics = row_metrics(row)
    assert metrics.expected["exec@1"] == pytest.approx(0.5)
    assert metrics.pessimistic["exec@1"] == 0.0 and metrics.optimistic["exec@1"] == 1.0


def test_reranking_part_of_the_list_keeps_the_rest_and_its_tail():
    hits = [hit(r, 1.0 - r / 10, r == 9, sid=f"s{r}") for r in range(1, 10)]
    hits.append(hit(10, 0.1, False, "canonical", sid="s10"))
    r = first_stage(hits, {"size": 3, "passing": 1}, 10, {"first": 10, "last": 12})
    new, rank1, tail, span, rank = reorder(r, [0.0, 1.0, 0.5], 3)
    assert [h.snippet_id for h in new[:3]] == ["s2", "s3", "s1"]
    assert [h.rank for h in new] == list(range(1, 11))
    assert new[5].tie_key == (0, hits[5].score) and new[5].score == hits[5].score
    assert tail == {"size": 3, "passing": 1}  # nothing of the first stage's tail was reranked
    assert span == {"first": 10, "last": 12} and rank == 10
    assert rank1 == {"size": 1, "passing": 0}


def test_a_first_stage_tie_straddling_k_is_cut_there():
    hits = [hit(1, 0.9, False), hit(2, 0.5, True), hit(3, 0.5, False)]
    r = first_stage(hits, {"size": 4, "passing": 1}, 5, {"first": 2, "last": 5})
    _, _, tail, span, _ = reorder(r, [0.0, 1.0], 2)
    assert tail == {"size": 3, "passing": 0}  # s2 (passing) was reranked out of the group
    assert span == {"first": 3, "last": 5}


# -- rrf, the cross-encoder, the registry -------------------------------------------------------
def run_of(name: str, order: list[str]) -> BenchmarkRun:
    top = tuple(hit(r, 1.0 - r / 10, False, sid=s) for r, s in enumerate(order, 1))
    result = first_stage(list(top), {"size": 1, "passing": 0}, 1, {"first": 1, "last": 1})
    return BenchmarkRun({"name": name}, "sha", 10, {"math_number_theory/clamp_add": result}, 0.0)


def test_rrf_sums_reciprocal_ranks_of_both_lists():
    runs = {"a": run_of("a", ["s0", "s1", "s2"]), "b": run_of("b", ["s2", "s1", "s9"])}
    reranker = get_reranker("rrf:a+b", RerankerContext(embedders=("a", "b"), runs=runs))
    [answer] = reranker.rerank("a", [RerankQuery(make_item(), candidates("x", "y", "z"))])
    assert answer.scores == pytest.approx((1 / 61, 1 / 62 + 1 / 62, 1 / 63 + 1 / 61))
    assert reranker.invocation()["fused"] == ["a", "b"]


@pytest.mark.parametrize(
    "name, message",
    [
        ("rrf:bm25", "two embedder names joined by '\\+'"),
        ("rrf:bm25+bm25", "with itself"),
        ("rrf:bm25+minilm", "add --embedder minilm"),
        ("ce:/nonexistent/model", "not a directory"),
        ("nope", "unknown reranker 'nope'; known: exec-consensus"),
    ],
)
def test_bad_names_say_what_to_do(name, message):
    with pytest.raises(RerankerError, match=message):
        get_reranker(name, RerankerContext(embedders=("bm25",)))


def test_entry_point_rerankers_are_found(monkeypatch):
    class Mine:
        name = "mine"

        def invocation(self) -> dict:
            return {"name": "mine"}

        def rerank(self, first_stage, queries):
            return [
                Reranked(tuple(float(c.first_stage_rank) for c in q.candidates)) for q in queries
            ]

        def close(self) -> None:
            pass

    monkeypatch.setattr(REGISTRY, "plugins", lambda: {"mine": lambda context: Mine()})
    assert get_reranker("mine").name == "mine"


def test_cross_encoder_from_a_local_directory(tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("transformers")
    model_dir = tiny_bert(tmp_path / "ce", classifier=True)
    reranker = get_reranker(f"ce:{model_dir}")
    queries = [RerankQuery(make_item(), candidates(CANONICAL, MUTANT, NOT_CALLABLE))] * 2
    answers = reranker.rerank("bm25", queries)
    assert len(answers) == 2 and answers[0].scores == answers[1].scores
    assert len(set(answers[0].scores)) == 3  # different code, different scores
    assert reranker.invocation()["model"] == str(model_dir.resolve())
    reranker.close()


def test_compare_puts_each_pipeline_beside_its_first_stage():
    from pytest_execretrieval.scoring.compare import beside_first_stage

    def report(name, first=None):
        return {"embedder": {"name": name}, **({"first_stage": first} if first else {})}

    given = [report("a+x", "a"), report("b+x", "b"), report("b"), report("a"), report("c+x", "c")]
    assert [r["embedder"]["name"] for r in beside_first_stage(given)] == [
        "b",
        "b+x",
        "a",
        "a+x",
        "c+x",
    ]
