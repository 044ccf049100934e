"""Several items directories in one pool (issue 54, point 5): ``--execretrieval-items`` is
repeatable, each directory keeps its own committed corpus, the pool is their union and one
gate decides on it; ids are unique across the directories; the pool's identity covers every
corpus in order; xdist workers get every directory's items."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from plugin_runs import without_timing

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import bundled_items_dir
from pytest_execretrieval.corpus.pools import combined_sha256
from pytest_execretrieval.corpus.store import DEFAULT_VARIANT, corpus_sha256
from pytest_execretrieval.orchestration import Handoff, load_pool

DATA = Path(__file__).parent / "data" / "items"
SPLIT = {"first": ("arrays_lists",), "second": ("math_number_theory", "strings")}
JS_IDS = sorted(f"{p.parent.name}/{p.stem}" for p in (DATA.parent / "js_items").glob("*/*.toml"))
ALL_IDS = {
    "arrays_lists/last_index_of",
    "arrays_lists/window_sums",
    "math_number_theory/clamp_add",
    "strings/count_vowels",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The four test-data items split into two items directories, each built on its own."""
    root = tmp_path_factory.mktemp("split")
    out = {}
    for name, domains in SPLIT.items():
        target = root / name
        for domain in domains:
            shutil.copytree(DATA / domain, target / domain)
        cache = ["--cache-dir", str(root / "build-cache")]
        assert cli.main(["build", str(target), "-j", "1", *cache]) == 0
        out[name] = target
    return out


@pytest.fixture(scope="module")
def built_js(built, tmp_path_factory) -> dict[str, Path]:
    """The two directories, each with a ``javascript/`` pool of its Python items' twins
    (built beside them: their evidence reads the twins)."""
    root = tmp_path_factory.mktemp("split-js")
    out = {}
    for name, source in built.items():
        target = root / name
        shutil.copytree(source, target)
        for domain in SPLIT[name]:
            if (DATA.parent / "js_items" / domain).is_dir():
                shutil.copytree(DATA.parent / "js_items" / domain, target / "javascript" / domain)
        cache = ["--cache-dir", str(root / "build-cache")]
        assert cli.main(["build", str(target / "javascript"), "-j", "1", *cache]) == 0
        out[name] = target
    return out


@pytest.fixture
def two(pytester, built) -> tuple[Path, Path]:
    """The two built directories, copied into the pytester directory."""
    for name, source in built.items():
        shutil.copytree(source, pytester.path / name)
    return pytester.path / "first", pytester.path / "second"


def bench(pytester, dirs, *args: str):
    """``pytest --embedder bm25`` on every directory of ``dirs`` (the = form), cache of its own."""
    return pytester.runpytest_subprocess(
        "--embedder=bm25",
        *(f"--execretrieval-items={d}" for d in dirs),
        f"--execretrieval-cache-dir={pytester.path / 'cache'}",
        "-p",
        "no:randomly",
        *args,
    )


def report(pytester, folder: str) -> dict:
    return json.loads((pytester.path / folder / "bm25.json").read_text())


def test_two_directories_make_one_pool_one_report_and_one_gate(pytester, two):
    first, second = two
    result = bench(pytester, two, "--execretrieval-report-dir=both")
    assert result.ret in (0, 1), result.stderr.str()
    made = report(pytester, "both")
    assert {row["query_id"] for row in made["per_query"]} == ALL_IDS
    assert made["corpus"]["n_queries"] == 4
    shas = [corpus_sha256(first), corpus_sha256(second)]
    # the identity covers both corpora, in order: neither directory's own, nor the reverse order
    assert made["corpus"]["sha256"] == combined_sha256(shas)
    assert made["corpus"]["sha256"] not in shas
    assert combined_sha256(shas) != combined_sha256(shas[::-1])
    alone = bench(pytester, [first], "--execretrieval-report-dir=one")  # one: as before
    assert alone.ret in (0, 1), alone.stderr.str()
    assert report(pytester, "one")["corpus"]["sha256"] == shas[0]
    # a baseline made the same way gates the same pool
    gated = bench(
        pytester,
        two,
        f"--execretrieval-baseline={pytester.path / 'both' / 'bm25.json'}",
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-report-dir=gated",
    )
    assert gated.ret == 0, gated.stdout.str() + gated.stderr.str()
    assert "gate [bm25]: PASS" in gated.stdout.str()
    again = report(pytester, "gated")
    assert again["gate"]["passed"] is True and again["corpus"]["sha256"] == made["corpus"]["sha256"]
    assert {row["query_id"] for row in again["per_query"]} == ALL_IDS


def test_an_item_id_in_two_directories_is_a_usage_error_naming_both(pytester, two):
    first, second = two
    (second / "arrays_lists").mkdir()
    shutil.copy(first / "arrays_lists" / "window_sums.toml", second / "arrays_lists")
    result = bench(pytester, two)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "arrays_lists/window_sums" in err
    assert str(first / "arrays_lists" / "window_sums.toml") in err
    assert str(second / "arrays_lists" / "window_sums.toml") in err


def test_bundled_names_the_bundled_benchmark(pytester, two):
    """``bundled`` is the bundled items: the test data's ``arrays_lists/window_sums`` is one
    of its ids too, so naming both is the duplicate-id usage error, naming both files."""
    first, _ = two
    result = bench(pytester, [first, "bundled"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert str(bundled_items_dir().resolve() / "arrays_lists" / "window_sums.toml") in err
    assert str(first / "arrays_lists" / "window_sums.toml") in err


def test_a_stale_corpus_names_its_directory_first_or_second(pytester, two):
    for stale in two:
        path = next(stale.glob("*/*.toml"))
        kept = path.read_text()
        path.write_text(kept.replace('query = "', 'query = "Edited. ', 1))
        result = bench(pytester, two)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        err = result.stderr.str()
        assert f"the corpus in {stale} is stale" in err
        assert f"execretrieval build {stale}" in err
        assert f"item {path.parent.name}/{path.stem} changed" in err
        path.write_text(kept)


def test_the_same_directory_twice_and_verifying_two_are_usage_errors(pytester, two):
    first, _ = two
    result = bench(pytester, [first, first])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is named twice" in result.stderr.str()
    verify = pytester.runpytest_subprocess(
        "--execretrieval-verify", *(f"--execretrieval-items={d}" for d in two)
    )
    assert verify.ret == pytest.ExitCode.USAGE_ERROR
    assert "checks one items directory (its own corpus) at a time" in verify.stderr.str()


def test_the_ini_key_lists_several_directories(pytester, two):
    pytester.makeini("[pytest]\nexecretrieval_items =\n    first\n    second\n")
    result = pytester.runpytest_subprocess(
        "--embedder=bm25", "--co", "-q", "-p", "no:randomly", "--execretrieval-cache-dir=cache"
    )
    assert result.ret == 0, result.stderr.str()
    listed = {line.split("[")[0] for line in result.stdout.lines if "[bm25]" in line}
    assert listed == ALL_IDS


def test_workers_write_the_reports_of_one_process(pytester, two):
    for flag in ("0", "2"):
        result = bench(pytester, two, "-n", flag, f"--execretrieval-report-dir=n{flag}")
        assert result.ret in (0, 1), result.stderr.str()
    n2 = pytester.path / "n2" / "bm25.json"
    assert without_timing(pytester.path / "n0" / "bm25.json") == without_timing(n2)
    assert len(report(pytester, "n2")["per_query"]) == 4


def test_the_handoff_rebuilds_each_item_in_its_own_directory(built, tmp_path):
    first, second = built["first"], built["second"]
    loaded = load_pool([first, second], stale_ok=False)
    assert [item.id for item in loaded.items] == sorted(ALL_IDS)
    text = Handoff(loaded, {}, frozenset()).to_text()
    here = [tmp_path / "a", tmp_path / "b"]  # a worker's copies, elsewhere
    again = Handoff.from_text(text, here, DEFAULT_VARIANT).loaded
    paths = {item.id: item.path for item in again.items}
    assert paths["arrays_lists/window_sums"] == here[0] / "arrays_lists" / "window_sums.toml"
    assert paths["strings/count_vowels"] == here[1] / "strings" / "count_vowels.toml"
    assert again.corpus is not None and loaded.corpus is not None
    assert again.corpus.snippets == loaded.corpus.snippets
    assert again.items_dirs == tuple(here)


def test_each_directory_s_javascript_folder_joins_the_javascript_pool(pytester, built_js):
    dirs = [pytester.path / name for name in built_js]
    for name, source in built_js.items():
        shutil.copytree(source, pytester.path / name)
    result = bench(pytester, dirs, "--execretrieval-report-dir=both")
    assert result.ret in (0, 1), result.stderr.str()
    js = report(pytester, "both/javascript")
    assert sorted(row["query_id"] for row in js["per_query"]) == JS_IDS  # ids: the twins'
    assert "cross-language [bm25]" in result.stdout.str()  # the twins paired across folders
    shas = [corpus_sha256(d / "javascript") for d in dirs]
    assert js["corpus"]["sha256"] == combined_sha256(shas)
    assert report(pytester, "both")["corpus"]["n_queries"] == 4
