"""The one registry shape embedders and rerankers share (``pytest_execretrieval/registry.py``):
entry points looked up once per ``sys.path``, built-ins before plug-ins, and a package missing
when the object is made named as the registry's own error."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from pytest_execretrieval.embedders import EmbedderError, get_embedder, known_names
from pytest_execretrieval.ranking.rerank import RerankerError, get_reranker
from pytest_execretrieval.ranking.rerank import known_names as reranker_names

EMBEDDERS = "pytest_execretrieval.embedders"
RERANKERS = "pytest_execretrieval.rerankers"


def install(root: Path, group: str, entry_points: dict[str, str], name: str, source: str) -> Path:
    """A distribution under ``root`` with these entry points in ``group`` and one module,
    ``name`` (a new name per test: Python imports a module once); returns ``root``."""
    info = root / "registry_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: registry-plugin\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    (root / f"{name}.py").write_text(source)
    return root


def test_entry_points_are_looked_up_once_not_on_every_lookup(monkeypatch, tmp_path):
    groups: list[str | None] = []
    real = importlib.metadata.entry_points

    def counted(**kwargs):
        groups.append(kwargs.get("group"))
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    monkeypatch.syspath_prepend(str(tmp_path))  # a path not seen yet: one lookup per group
    for _ in range(3):
        get_embedder("bm25")
        assert "bm25" in known_names()
        assert "exec-consensus" in reranker_names()
        with pytest.raises(RerankerError, match="unknown reranker 'nope'"):
            get_reranker("nope")
    assert groups.count(EMBEDDERS) == 1 and groups.count(RERANKERS) == 1, groups
    # A distribution put on the path since is found: the path changed, so they are looked up again.
    module = (
        "from pytest_execretrieval.embedders import get_embedder\n"
        "def make(options):\n    return get_embedder('bm25', options)\n"
    )
    root = install(
        tmp_path / "late", EMBEDDERS, {"late-model": "late_plugin:make"}, "late_plugin", module
    )
    monkeypatch.syspath_prepend(str(root))
    assert "late-model" in known_names()
    assert get_embedder("late-model").name == "bm25"
    assert groups.count(EMBEDDERS) == 2


def test_a_plug_in_named_like_a_built_in_does_not_replace_it(monkeypatch, tmp_path):
    module = "def make(options):\n    raise AssertionError('the plug-in replaced bm25')\n"
    root = install(tmp_path, EMBEDDERS, {"bm25": "shadow_plugin:make"}, "shadow_plugin", module)
    monkeypatch.syspath_prepend(str(root))
    assert get_embedder("bm25").name == "bm25"
    assert known_names().count("bm25") == 1


@pytest.mark.parametrize(
    ("module", "make", "error"),
    [
        (f"{EMBEDDERS}.sentence_transformer", lambda: get_embedder("st:/models/x"), EmbedderError),
        (f"{EMBEDDERS}.npz", lambda: get_embedder("npz:/frozen.npz"), EmbedderError),
        (
            "pytest_execretrieval.ranking.rerank.consensus",
            lambda: get_reranker("exec-consensus"),
            RerankerError,
        ),
        ("pytest_execretrieval.ranking.rerank.rrf", lambda: get_reranker("rrf:a+b"), RerankerError),
    ],
)
def test_a_missing_module_is_the_registry_error_naming_the_name(monkeypatch, module, make, error):
    monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    with pytest.raises(error, match="is not installed here"):
        make()


def test_the_rerank_option_names_every_shipped_reranker():
    """The option's help comes from the registry: a reranker added there (medoid, clones:NAME
    were once missing from a hand-written list) is named where users look."""
    from pytest_execretrieval.ranking.rerank import BUILTIN, PREFIXED, REGISTRY
    from pytest_execretrieval.settings import OPTIONS

    (rerank,) = [o for o in OPTIONS if o.name == "rerank"]
    for name in BUILTIN:
        assert name in rerank.help
    for prefix in PREFIXED:
        assert any(s.startswith(prefix + ":") for s in REGISTRY.spelled), prefix
        assert f"{prefix}:" in rerank.help
