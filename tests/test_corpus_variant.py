"""Which corpus of an items directory: one checked record instead of three parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.store import (
    MAX_STACK,
    SOURCES,
    CorpusVariant,
    build_command,
    corpus_dir,
)
from pytest_execretrieval.corpus.variants import OPTION_DEFAULTS, VARIANTS
from pytest_execretrieval.orchestration import Handoff, Loaded
from pytest_execretrieval.settings import BY_NAME

ITEMS = Path("/items")


def valid(stack: int, source: str, families: bool, balanced: bool) -> bool:
    chosen = (stack != 1) + (source != "operators") + families + balanced
    return 1 <= stack <= MAX_STACK and source in SOURCES and chosen <= 1


@given(
    st.integers(-1, MAX_STACK + 2),
    st.sampled_from([*SOURCES, "mutmutt"]),
    st.booleans(),
    st.booleans(),
)
def test_every_conflict_is_refused_naming_the_options(stack, source, families, balanced):
    if valid(stack, source, families, balanced):
        variant = CorpusVariant.checked(stack, source, families, "--{}".format, balanced)
        assert variant == CorpusVariant(stack, source, families, balanced)
        # the build command names exactly the options that select this corpus
        assert build_command(ITEMS, variant).split()[3:] == (
            (["--stack", str(stack)] if stack != 1 else [])
            + (["--source", source] if source != "operators" else [])
            + (["--families"] if families else [])
            + (["--balanced"] if balanced else [])
        )
    else:
        with pytest.raises(ValueError, match=r"--execretrieval-(stack|source|families|balanced)"):
            CorpusVariant.checked(stack, source, families, "--execretrieval-{}".format, balanced)
        with pytest.raises(ValueError):
            CorpusVariant(stack, source, families, balanced)


def test_each_variant_has_its_own_directory_and_engine():
    variants = [
        CorpusVariant(),
        *(CorpusVariant(stack=k) for k in range(2, MAX_STACK + 1)),
        CorpusVariant(source="mutmut"),
        CorpusVariant(families=True),
        CorpusVariant(balanced=True),
    ]
    dirs = [corpus_dir(ITEMS, v) for v in variants]
    assert dirs[0] == ITEMS and len(set(dirs)) == len(dirs)
    assert [d.name for d in dirs[1:]] == [
        *("stack-2", "stack-3", "stack-4", "mutmut", "families", "balanced")
    ]
    assert engine(CorpusVariant(families=True))["families"]
    assert engine(CorpusVariant(balanced=True))["balanced"]
    assert engine(CorpusVariant(stack=3))["stack"] == 3


def test_an_xdist_worker_reads_the_corpus_its_controller_chose(tmp_path):
    families = CorpusVariant(families=True)
    text = Handoff(
        Loaded([], None, corpus_dir(tmp_path, families), [], frozenset(), False), {}, frozenset()
    ).to_text()
    assert Handoff.from_text(text, tmp_path, families).loaded.corpus_dir == tmp_path / "families"


@pytest.mark.parametrize(
    "kind, k", [(kind.name, k) for kind in VARIANTS.values() for k in kind.ks], ids=str
)
def test_the_variant_table_is_the_one_place_a_kind_is_defined(kind, k):
    """A row's directory, flags and options round-trip: the build command of a kind's corpus
    parses back (through the `execretrieval build` parser) to the same variant, in its folder."""
    variant = CorpusVariant.of(kind, k)
    assert (variant.kind, variant.k) == (kind, k)
    assert corpus_dir(ITEMS, variant) == ITEMS / VARIANTS[kind].directory.format(k=k)
    args = cli.parser().parse_args(build_command(ITEMS, variant).split()[1:])
    flag = "--{}".format
    assert CorpusVariant.checked(args.stack, args.source, args.families, flag, args.balanced) == (
        variant
    )
    # the benchmark's options are the build's, with the same defaults (the default corpus)
    assert {name: BY_NAME[name].default for name in OPTION_DEFAULTS} == OPTION_DEFAULTS
    assert CorpusVariant(**OPTION_DEFAULTS) == CorpusVariant.of("default")


def test_every_kind_has_its_own_folder():
    variants = [CorpusVariant.of(kind.name, k) for kind in VARIANTS.values() for k in kind.ks]
    folders = [corpus_dir(ITEMS, v) for v in variants]
    assert len(set(folders)) == len(folders) and ITEMS in folders
    with pytest.raises(ValueError, match="'stack'"):
        CorpusVariant.of("stack", 1)  # one edit is the default corpus
