"""`execretrieval train --objective cross-encoder`: a reranker trained for a few steps on three
of the four test items (CPU, seconds) from the packaged MiniLM's transformer; its loss falls,
its card names the objective and the loss, the benchmark refuses its training items, and it
loads and reranks as ``ce:DIR`` in a real benchmark run on its held-out item."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval.cli import main
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.model_card import read_card
from pytest_execretrieval.orchestration import SetupError, refuse_training_items
from pytest_execretrieval.ranking.rerank import get_reranker
from pytest_execretrieval.training.cross_encoder import columns
from pytest_execretrieval.training.examples import families
from pytest_execretrieval.training.train import TrainConfig, TrainingError

DATA = Path(__file__).parent / "data" / "items"
HELD_OUT = "strings/count_vowels"
STEPS = 5


@pytest.fixture(scope="module")
def reranker(tmp_path_factory) -> Path:
    """A cross-encoder trained by the command: ListNet in the diff view, every step the same
    batch (the three training families fit in one), so the loss must fall from step to step."""
    root = tmp_path_factory.mktemp("ce")
    items, _ = load_items(DATA)
    listing = root / "train.txt"
    listing.write_text("".join(f"{i.id}\n" for i in items if i.id != HELD_OUT))
    argv = ["train", str(DATA), "--embedder", "minilm", "--out", str(root / "model")]
    argv += ["--split", str(listing), "--objective", "cross-encoder", "--loss", "listnet"]
    argv += ["--batch-size", "4", "--learning-rate", "1e-3", "--max-seq-length", "64"]
    argv += ["--negatives", "1", "--max-steps", str(STEPS), "--seed", "3", "--view", "diff"]
    argv += ["--cache-dir", str(root / "cache")]
    assert main(argv) == 0
    return root / "model"


def test_the_loss_falls_and_the_card_names_the_objective_and_loss(reranker):
    card = read_card(reranker)
    assert card["objective"] == "cross-encoder"
    assert card["loss"] == "listnet" and card["loss_class"] == "ListNetLoss"
    assert card["view"] == "diff"
    assert "fresh one-output classification head" in card["initialisation"]
    assert card["base_model"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert HELD_OUT in card["split"]["held_out"] and len(card["split"]["train"]) == 3
    assert card["examples"]["items"] == 3 and card["hyper_parameters"]["max_seq_length"] == 64
    curve = [loss for _, loss in card["loss_curve"]]
    assert card["steps"] == STEPS and len(curve) == STEPS
    assert curve[-1] < curve[0]
    readme = (reranker / "README.md").read_text()
    assert "--execretrieval-rerank ce:" in readme and "ListNetLoss" in readme


def test_each_loss_reads_the_family_in_its_own_shape():
    items, _ = load_items(DATA)
    found = families(items, read_corpus(DATA), [i.id for i in items])
    n_docs = sum(len(f.positives) + len(f.negatives) for f in found)
    pairs = columns(found, "bce")
    assert len(pairs["label"]) == n_docs and set(pairs["label"]) == {0.0, 1.0}
    lists = columns(found, "lambda")
    assert [len(d) for d in lists["documents"]] == [len(x) for x in lists["labels"]]
    assert all(labels[0] == 1.0 and labels[-1] == 0.0 for labels in lists["labels"])
    marked = columns(found, "lambda", "diff")
    assert [len(d) for d in marked["documents"]] == [len(d) for d in lists["documents"]]
    assert all(any("«" in doc for doc in docs) for docs in marked["documents"])
    unmarked = [[d.replace("«", "").replace("»", "") for d in ds] for ds in marked["documents"]]
    assert unmarked == lists["documents"]
    tuples = columns(found, "mnrl")
    assert {"anchor", "positive", "negative_1"} <= set(tuples)
    assert len(tuples["anchor"]) == sum(len(f.positives) for f in found)


def test_a_loss_of_the_other_objective_is_refused():
    with pytest.raises(TrainingError, match="--loss 'gist' with --objective cross-encoder"):
        TrainConfig(objective="cross-encoder", loss="gist")
    with pytest.raises(TrainingError, match="--loss 'bce' with --objective bi-encoder"):
        TrainConfig(loss="bce")


def test_the_benchmark_refuses_its_training_items_unless_asked(reranker):
    ce = get_reranker(f"ce:{reranker}")
    ids = [i.id for i in load_items(DATA)[0]]
    with pytest.raises(SetupError, match=r"--execretrieval-rerank ce:.* was trained on 3 of the 4"):
        refuse_training_items({ce.name: ce}, ids, "--execretrieval-rerank")
    refuse_training_items({ce.name: ce}, [HELD_OUT], "--execretrieval-rerank")  # held out: fine


def test_it_loads_as_ce_dir_and_reranks_bm25_in_a_benchmark_run(pytester, items, reranker):
    model = pytester.path / "ce-model"
    shutil.copytree(reranker, model)
    args = ("--execretrieval-rerank", f"ce:{model}", "--execretrieval-report-dir=reports")
    args += ("--execretrieval-rerank", f"clones:ce:{model}")  # deciding only among clones
    run = bench(pytester, items, *args, str(items / "strings"))
    out = run.stdout.str()
    assert run.ret in (0, 1), out
    assert f"{HELD_OUT}[bm25+ce:{model}]" in out
    reports = [json.loads(p.read_text()) for p in (pytester.path / "reports").glob("bm25_*.json")]
    by_name = {r["embedder"]["reranker"]["name"]: r for r in reports}
    assert set(by_name) == {f"ce:{model}", f"clones:ce:{model}"}
    report = by_name[f"ce:{model}"]
    assert [q["query_id"] for q in report["per_query"]] == [HELD_OUT]
    assert report["embedder"]["reranker"]["training"]["split"]["held_out"] == [HELD_OUT]
    assert report["embedder"]["reranker"]["view"] == "diff"
    assert [q["query_id"] for q in by_name[f"clones:ce:{model}"]["per_query"]] == [HELD_OUT]
    clones = by_name[f"clones:ce:{model}"]["embedder"]["reranker"]
    assert (
        clones["reranker"]["view"] == "diff"
        and clones["training"] == report["embedder"]["reranker"]["training"]
    )
