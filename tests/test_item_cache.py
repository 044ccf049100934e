"""Item files are validated once: a later load takes a file's checked fields from the signed
item cache while its text is unchanged, and validates it again when it changed or when the
cache entry does not verify."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_execretrieval.corpus.item_cache import ItemCache
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.orchestration import load

DATA = Path(__file__).parent / "data" / "items"


@pytest.fixture
def items(tmp_path) -> Path:
    shutil.copytree(DATA, tmp_path / "items")
    return tmp_path / "items"


def cached_load(items: Path, cache_dir: Path):
    cache = ItemCache(cache_dir, items)
    found = load_items(items, cache)
    cache.save()
    return found, cache


def test_a_second_load_reads_the_validated_fields_from_the_cache(items, tmp_path):
    (cold, problems), cache = cached_load(items, tmp_path / "cache")
    assert problems == [] and len(cold) == 4 and cache.path.is_file()
    assert (
        load(items, stale_ok=False, item_cache=ItemCache(tmp_path / "cache", items)).items == cold
    )
    # An entry signed with the user's key is what a load believes: edit one and sign it
    entries = json.loads(cache.signer.read_body(cache.path, cache.key, 1 << 26))
    entries["strings/count_vowels.toml"][1]["query"] = "from the cache"
    cache.signer.write_body(cache.path, cache.key, json.dumps(entries).encode())
    (warm, _), _ = cached_load(items, tmp_path / "cache")
    assert {i.id: i.query for i in warm}["strings/count_vowels"] == "from the cache"
    assert [i.path for i in warm] == [i.path for i in cold]


def test_an_entry_that_does_not_verify_is_discarded_and_every_file_validated(items, tmp_path):
    (cold, _), cache = cached_load(items, tmp_path / "cache")
    forged = cache.path.read_bytes().replace(b"Count the vowels", b"Count no vowels")
    assert forged != cache.path.read_bytes()
    cache.path.write_bytes(forged)  # the tag no longer matches the body
    (again, _), _ = cached_load(items, tmp_path / "cache")
    assert again == cold
    assert b"Count no vowels" not in cache.path.read_bytes()  # rewritten from the files


def test_a_changed_file_is_validated_again(items, tmp_path):
    cached_load(items, tmp_path / "cache")
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace('entry_point = "count_vowels"', 'entry_point = "x"'))
    (found, problems), _ = cached_load(items, tmp_path / "cache")
    assert "strings/count_vowels" not in {i.id for i in found} and len(found) == 3
    assert [(p.path, p.field) for p in problems][0] == (path, "canonical")
    (_, again), cache = cached_load(items, tmp_path / "cache")
    assert again == problems  # a malformed file is never cached: reported on every load
    assert "strings/count_vowels.toml" not in json.loads(
        cache.signer.read_body(cache.path, cache.key, 1 << 26)
    )


def test_a_javascript_item_keeps_its_language_through_the_cache(tmp_path):
    path = tmp_path / "items" / "strings" / "shout.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        'domain = "strings"\nlanguage = "javascript"\nquery = "Upper-case a string."\n'
        'entry_point = "shout"\ncanonical = """\nfunction shout(s) {\n  return s.toUpperCase();\n'
        '}\n"""\ntests = ["assert shout(\'a\') == \'A\'"]\n'
    )
    (cold, problems), _ = cached_load(path.parents[1], tmp_path / "cache")
    (warm, _), cache = cached_load(path.parents[1], tmp_path / "cache")
    assert problems == [] and cache.seen == cache.entries  # the second load read the cache
    assert warm == cold and warm[0].language == "javascript"
