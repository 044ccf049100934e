"""``ce:DIR`` is untrusted input: a model directory from a pull request or a download loads with
the activation and the classes chosen by the reranker, never by its configuration. A config that
names a host function, a module, a class outside the trainer's, a pickle or code in the directory
is refused with its reason before any work (a usage error of the run, never an INTERNALERROR);
a directory ``execretrieval train`` wrote loads and scores as before."""

from __future__ import annotations

import json
import pickle
import shutil
import sys
import types
from pathlib import Path

import pytest
from plugin_runs import bench
from tiny_bert import tiny_bert

from pytest_execretrieval.corpus.items import BenchmarkItem
from pytest_execretrieval.ranking.rerank import Candidate, RerankerError, RerankQuery, get_reranker

pytest.importorskip("sentence_transformers")
transformers = pytest.importorskip("transformers")

QUERY = "Add two integers and clamp the sum to [lo, hi]."
CODES = (
    "def clamp_add(a, b, lo, hi):\n    return max(lo, min(hi, a + b))\n",
    "def clamp_add(a, b, lo, hi):\n    return max(lo, min(hi, a - b))\n",
    "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n",
)
ITEM = BenchmarkItem(
    "math_number_theory/clamp_add",
    Path("clamp_add.toml"),
    "math_number_theory",
    QUERY,
    "clamp_add",
    CODES[0],
    ("assert clamp_add(1, 2, 0, 10) == 3",),
)
QUERIES = [
    RerankQuery(
        ITEM, tuple(Candidate(f"s{i}", c, i + 1, 1.0 - i / 10) for i, c in enumerate(CODES))
    )
]


def tiny_cross_encoder(where: Path) -> Path:
    """A one-output CrossEncoder saved as the trainer saves one (``CrossEncoder(base,
    num_labels=1)`` then ``model.save(out)``): config.json, config_sentence_transformers.json
    with its activation, modules.json, sentence_bert_config.json, tokenizer files and
    model.safetensors; random weights, the same on every run."""
    from sentence_transformers import CrossEncoder

    base = tiny_bert(where / "base", classifier=True)
    out = where / "ce"
    CrossEncoder(str(base), num_labels=1).save(str(out))
    shutil.rmtree(base)
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce"))


@pytest.fixture
def model(trained, tmp_path) -> Path:
    """A copy of the tiny CrossEncoder to tamper with."""
    return Path(shutil.copytree(trained, tmp_path / "model"))


def edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_the_trainers_files_are_what_the_fixture_writes(trained):
    assert {p.name for p in trained.iterdir()} >= {
        "config.json",
        "config_sentence_transformers.json",
        "modules.json",
        "sentence_bert_config.json",
        "model.safetensors",
    }
    written = json.loads((trained / "config_sentence_transformers.json").read_text())
    assert written["activation_fn"] == "torch.nn.modules.activation.Sigmoid"


def test_a_directory_the_trainer_writes_scores_as_sentence_transformers_does(trained):
    """The scores (and so the ranking) are those of a plain ``CrossEncoder(DIR)`` load: the
    sigmoid the trainer recorded, applied by us."""
    from sentence_transformers import CrossEncoder

    reranker = get_reranker(f"ce:{trained}")
    [answer] = reranker.rerank("bm25", QUERIES)
    reranker.close()
    pairs = [(QUERY, code) for code in CODES]
    expected = CrossEncoder(str(trained), device="cpu").predict(pairs, show_progress_bar=False)
    assert answer.scores == pytest.approx(tuple(float(s) for s in expected), abs=0)
    assert all(0.0 < s < 1.0 for s in answer.scores) and len(set(answer.scores)) == 3


@pytest.fixture
def marker(monkeypatch, tmp_path) -> Path:
    """A host function under ``torch.`` (the prefix sentence-transformers imports from a config
    without ``trust_remote_code``) that leaves a file when it is called."""
    called = tmp_path / "called"
    module = types.ModuleType("torch.execretrieval_marker")

    def leave_marker():
        called.write_text("called")
        return lambda scores: scores

    module.leave_marker = leave_marker  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.execretrieval_marker", module)
    return called


HOST_FUNCTION = "torch.execretrieval_marker.leave_marker"


@pytest.mark.parametrize("where", ["config_sentence_transformers.json", "config.json"])
def test_a_config_naming_a_host_function_is_neither_imported_nor_called(model, marker, where):
    if where == "config.json":  # the pre-v4 place sentence-transformers still reads
        (model / "config_sentence_transformers.json").unlink()
        edit_json(model / where, sentence_transformers={"activation_fn": HOST_FUNCTION})
    else:
        edit_json(model / where, activation_fn=HOST_FUNCTION)
    with pytest.raises(RerankerError, match=f"activation_fn {HOST_FUNCTION!r}.*Sigmoid"):
        reranker = get_reranker(f"ce:{model}")
        reranker.rerank("bm25", QUERIES)  # today: loads, calling the function
    assert not marker.exists()


def test_the_old_activation_key_is_checked_too(model, marker):
    edit_json(model / "config.json", sbert_ce_default_activation_function=HOST_FUNCTION)
    (model / "config_sentence_transformers.json").unlink()
    with pytest.raises(RerankerError, match="sbert_ce_default_activation_function"):
        get_reranker(f"ce:{model}").rerank("bm25", QUERIES)
    assert not marker.exists()


class Payload:
    """Unpickling it would leave a file: a weights-only load must never get that far."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (self.path, "unpickled"))


@pytest.mark.parametrize("beside_safetensors", [False, True])
def test_a_pickle_is_refused_with_its_reason(model, tmp_path, beside_safetensors):
    unpickled = tmp_path / "unpickled"
    (model / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(unpickled)))
    if not beside_safetensors:
        (model / "model.safetensors").unlink()
    with pytest.raises(RerankerError, match=r"pytorch_model\.bin: a pickle"):
        get_reranker(f"ce:{model}").rerank("bm25", QUERIES)  # today: UnpicklingError or loads
    assert not unpickled.exists()


@pytest.mark.parametrize(
    "name, reason",
    [
        ("modeling_evil.py", "Python code"),
        ("sub/helper.py", "Python code"),
        ("optimizer.pt", "a pickle"),
        ("data.pkl", "a pickle"),
        ("native.so", "a native library"),
    ],
)
def test_code_and_pickles_anywhere_in_the_directory_are_refused(model, name, reason):
    (model / name).parent.mkdir(exist_ok=True)
    (model / name).write_text("import os\n")
    with pytest.raises(RerankerError, match=f"{name}: {reason}"):
        get_reranker(f"ce:{model}").rerank("bm25", QUERIES)


def test_an_executable_file_is_refused(model):
    (model / "run").write_text("#!/bin/sh\necho hi\n")
    (model / "run").chmod(0o755)
    with pytest.raises(RerankerError, match="run: an executable file"):
        get_reranker(f"ce:{model}")


def test_weights_other_than_model_safetensors_are_refused(model):
    (model / "model.safetensors").rename(model / "model-00001-of-00001.safetensors")
    with pytest.raises(RerankerError, match="model-00001-of-00001.safetensors: weights"):
        get_reranker(f"ce:{model}").rerank("bm25", QUERIES)
    (model / "model-00001-of-00001.safetensors").unlink()
    with pytest.raises(RerankerError, match="holds no model.safetensors"):
        get_reranker(f"ce:{model}").rerank("bm25", QUERIES)


@pytest.mark.parametrize(
    "file, changes, message",
    [
        (
            "config.json",
            {"auto_map": {"AutoModelForSequenceClassification": "modeling_evil.Evil"}},
            "config.json: auto_map",
        ),
        ("config.json", {"trust_remote_code": True}, "config.json: trust_remote_code"),
        (
            "config.json",
            {"text_config": {"auto_map": {"AutoConfig": "x.Y"}}},
            "config.json: text_config.auto_map",
        ),
        ("config.json", {"architectures": ["BertForRetrieval"]}, "architectures"),
        ("config.json", {"architectures": ["LlamaForCausalLM"]}, "architectures"),
        ("config.json", {"model_type": "llama"}, "model_type 'llama'"),
        ("config.json", {"tokenizer_class": "AutoModel"}, "tokenizer_class 'AutoModel'"),
        ("config.json", {"dtype": "load"}, "dtype 'load'"),
        ("config.json", {"quantization_config": {"quant_method": "x"}}, "quantization_config"),
        (
            "config.json",
            {"id2label": {"0": "a", "1": "b"}, "num_labels": 2},
            "2 outputs",
        ),
        ("tokenizer_config.json", {"tokenizer_class": "Evil"}, "tokenizer_class 'Evil'"),
        (
            "tokenizer_config.json",
            {"auto_map": {"AutoTokenizer": ["tok.Evil", None]}},
            "tokenizer_config.json: auto_map",
        ),
        (
            "sentence_bert_config.json",
            {"model_args": {"trust_remote_code": True}},
            "sentence_bert_config.json: model_args",
        ),
        (
            "sentence_bert_config.json",
            {"transformer_task": "retrieval"},
            "transformer_task 'retrieval'",
        ),
        (
            "sentence_bert_config.json",
            {"modality_config": {"text": {"method": "save_pretrained", "method_output_name": "x"}}},
            "modality_config",
        ),
    ],
)
def test_config_fields_that_pick_code_are_refused(model, file, changes, message):
    edit_json(model / file, **changes)
    with pytest.raises(RerankerError, match=message):
        get_reranker(f"ce:{model}")  # before any work, not at the first rerank


@pytest.mark.parametrize(
    "modules",
    [
        [{"idx": 0, "name": "0", "path": "", "type": "os.system"}],
        [
            {
                "idx": 0,
                "name": "0",
                "path": "",
                "type": "sentence_transformers.base.modules.transformer.Transformer",
            },
            {
                "idx": 1,
                "name": "1",
                "path": "1_Dense",
                "type": "sentence_transformers.models.Dense",
            },
        ],
    ],
)
def test_modules_json_may_name_only_the_transformer(model, modules):
    (model / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(RerankerError, match="modules.json"):
        get_reranker(f"ce:{model}")


@pytest.mark.parametrize(
    "name", ["adapter_config.json", "processor_config.json", "preprocessor_config.json"]
)
def test_files_that_name_another_model_or_a_processor_class_are_refused(model, name):
    (model / name).write_text('{"processor_class": "Evil"}')
    with pytest.raises(RerankerError, match=name):
        get_reranker(f"ce:{model}")


@pytest.mark.parametrize(
    "file, body, message",
    [
        ("config.json", b"{not json", "config.json"),
        ("config.json", b"[]", "config.json"),
        ("config.json", b"[" * 100_000, "config.json"),
        ("modules.json", b"{}", "modules.json"),
    ],
)
def test_an_unreadable_config_is_a_named_error(model, file, body, message):
    (model / file).write_bytes(body)
    with pytest.raises(RerankerError, match=message):
        get_reranker(f"ce:{model}")


def test_an_oversized_config_is_refused_unread(model):
    with (model / "config.json").open("ab") as f:
        f.write(b" " * (2 << 20))
    with pytest.raises(RerankerError, match="larger than"):
        get_reranker(f"ce:{model}")


@pytest.mark.parametrize(
    "file, body",
    [("model.safetensors", b"\x00" * 64), ("tokenizer.json", b"{not json")],
)
def test_a_deserialiser_refusal_is_a_named_error(model, file, body):
    if not (model / file).exists() and file == "tokenizer.json":
        pytest.skip("this tokenizer saves no tokenizer.json")
    (model / file).write_bytes(body)
    reranker = get_reranker(f"ce:{model}")
    with pytest.raises(RerankerError, match=f"ce:{model}: cannot load a CrossEncoder: "):
        reranker.rerank("bm25", QUERIES)


def test_a_hostile_directory_ends_the_run_as_a_usage_error(pytester, items, trained):
    model = Path(shutil.copytree(trained, pytester.path / "hostile"))
    (model / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}))
    (model / "model.safetensors").unlink()
    run = bench(pytester, items, "--execretrieval-rerank", f"ce:{model}")
    assert run.ret == pytest.ExitCode.USAGE_ERROR, run.stdout.str() + run.stderr.str()
    err = run.stderr.str()
    assert "pytorch_model.bin: a pickle" in err and "INTERNALERROR" not in err
