"""`execretrieval train`: a few steps on the four test items (CPU, seconds), then the model
loads as ``st:DIR`` and ranks, its card is complete, the loss fell, and the benchmark refuses to
score it on its own training items unless asked to."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval.cli import main
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import CorpusVariant, corpus_sha256, read_corpus
from pytest_execretrieval.embedders import EmbedderError, EmbedderOptions, get_embedder
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.model_card import CARD, REQUIRED, read_card
from pytest_execretrieval.ranking.benchmark import run_benchmark
from pytest_execretrieval.training.split import item_list_split
from pytest_execretrieval.training.train import TrainConfig, TrainingError, train_split

DATA = Path(__file__).parent / "data" / "items"
HELD_OUT = "strings/count_vowels"
TINY = TrainConfig(
    batch_size=4, max_steps=3, learning_rate=1e-4, max_seq_length=64, seed=7, negatives=1
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A MiniLM fine-tuned for four steps on three of the four test items."""
    root = tmp_path_factory.mktemp("train")
    items, _ = load_items(DATA)
    listing = root / "train.txt"
    listing.write_text("".join(f"{i.id}\n" for i in items if i.id != HELD_OUT))
    split = item_list_split(items, listing)
    train_split(DATA, "minilm", root / "model", split, TINY, cache_dir=root / "cache")
    return root / "model"


def test_the_card_records_what_the_model_saw_and_the_loss_fell(trained):
    card = read_card(trained)
    assert set(REQUIRED) <= set(card)
    assert card["base_model"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert len(card["base_model"]["weights_sha256"]) == 64
    assert card["corpus"]["sha256"] == corpus_sha256(DATA)
    assert HELD_OUT in card["split"]["held_out"] and HELD_OUT not in card["split"]["train"]
    assert len(card["split"]["train"]) == 3
    assert card["loss"] == "mnrl" and card["hyper_parameters"]["seed"] == 7
    assert card["steps"] == 3 and card["training_time"]["cpu_s"] > 0
    assert {"sentence-transformers", "torch", "transformers", "datasets"} <= set(
        card["package_versions"]
    )
    curve = [loss for _, loss in card["loss_curve"]]
    assert len(curve) == 3 and curve[-1] < curve[0]
    assert not (trained / "checkpoints").exists()  # a finished run keeps the model only
    readme = (trained / "README.md").read_text()
    assert "corpus sha256" in readme and card["corpus"]["sha256"] in readme


def test_the_model_loads_as_st_dir_and_ranks(trained, tmp_path):
    embedder = get_embedder(f"st:{trained}", EmbedderOptions(cache_dir=str(tmp_path)))
    invocation = embedder.invocation()
    assert invocation["training"]["split"]["held_out"] == [HELD_OUT]
    items, _ = load_items(DATA)
    corpus = read_corpus(DATA)
    with SuiteRunner(cache_dir=tmp_path) as runner:
        run = run_benchmark(items, corpus, corpus_sha256(DATA), embedder, runner, tmp_path)
    assert set(run.results) == {i.id for i in items}
    for result in run.results.values():
        assert len(result.top) == 10 and 1 <= result.canonical_rank <= len(corpus.snippets)


def test_a_finished_model_is_not_overwritten_and_resume_needs_a_checkpoint(trained, tmp_path):
    items, _ = load_items(DATA)
    listing = tmp_path / "train.txt"
    listing.write_text(f"{HELD_OUT}\n")
    split = item_list_split(items, listing)
    with pytest.raises(TrainingError, match="already holds a trained model"):
        train_split(DATA, "minilm", trained, split, TINY, cache_dir=tmp_path)
    with pytest.raises(TrainingError, match="no checkpoint"):
        train_split(DATA, "minilm", tmp_path / "new", split, TINY, cache_dir=tmp_path, resume=True)
    assert (
        main(
            [
                "train",
                str(DATA),
                "--embedder",
                "bm25",
                "--out",
                str(tmp_path / "x"),
                "--split",
                "all",
            ]
        )
        == 2
    )


def run_bench(pytester, items: Path, model: Path, *args: str):
    return bench(pytester, items, *args, embedders=(f"st:{model}",))


def test_the_benchmark_refuses_the_training_items_unless_asked(pytester, items, trained):
    model = pytester.path / "model"
    shutil.copytree(trained, model)
    refused = run_bench(pytester, items, model)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*was trained on 3 of the 4 selected items*--execretrieval-allow-training-items*"]
    )
    held = run_bench(
        pytester, items, model, str(items / "strings"), "--execretrieval-report-dir", "held"
    )
    assert held.ret in (0, 1)
    (written,) = (pytester.path / "held").glob("*.json")
    report = json.loads(written.read_text())
    assert [q["query_id"] for q in report["per_query"]] == [HELD_OUT]
    assert report["embedder"]["training"]["split"]["name"] == "file:train.txt"
    allowed = run_bench(
        pytester,
        items,
        model,
        "--execretrieval-allow-training-items",
        "--execretrieval-report-dir",
        "all",
    )
    assert allowed.ret in (0, 1)
    (written,) = (pytester.path / "all").glob("*.json")
    assert json.loads(written.read_text())["corpus"]["n_queries"] == 4


def test_a_broken_card_is_an_error_not_an_untrained_model(trained, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(trained, model)
    (model / CARD).write_text("{}")
    embedder = get_embedder(f"st:{model}", EmbedderOptions(cache_dir=str(tmp_path)))
    with pytest.raises(EmbedderError, match="training card lacks"):
        embedder.invocation()


def test_a_variant_is_trained_on_only_where_its_corpus_is_built(tmp_path):
    items, _ = load_items(DATA)
    listing = tmp_path / "train.txt"
    listing.write_text(f"{HELD_OUT}\n")
    split = item_list_split(items, listing)
    balanced = CorpusVariant(balanced=True)
    build = f"run `execretrieval build {DATA} --balanced`"
    with pytest.raises(TrainingError, match=re.escape(build)):
        train_split(
            DATA, "minilm", tmp_path / "m", split, TINY, cache_dir=tmp_path, variant=balanced
        )
