"""The hosted rerankers (Voyage rerank-2.5, Cohere rerank-v3.5) against local servers (127.0.0.1)
that check the documented request shapes and answer in the documented response shapes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_execretrieval.corpus.items import BenchmarkItem
from pytest_execretrieval.ranking.rerank import (
    Candidate,
    RerankerContext,
    RerankerError,
    RerankQuery,
)
from pytest_execretrieval.ranking.rerank import get_reranker as _get

pytest.importorskip("httpx")

KEY = "sk-rerank-KEYSENTINEL-never-shown"
SPEC = {  # name -> (path, model, key variable, allowed body fields, results field)
    "voyage-rerank-2.5": (
        "/v1/rerank",
        "rerank-2.5",
        "VOYAGE_API_KEY",
        {"query", "documents", "model", "top_k", "return_documents", "truncation"},
        "data",
    ),
    "cohere-rerank-v3.5": (
        "/v2/rerank",
        "rerank-v3.5",
        "CO_API_KEY",
        {"model", "query", "documents", "top_n", "max_tokens_per_doc"},
        "results",
    ),
}


def relevance(query: str, document: str) -> float:
    words = set(query.lower().split())
    return round(sum(w in document.lower() for w in words) / max(1, len(words)), 4)


class FakeReranker:
    """Checks each request against the provider's documentation; ``faults``: statuses to answer
    first (one per request); ``seen``: the decoded bodies; ``violations``: what was wrong."""

    def __init__(self, name: str, faults=()):
        self.path, self.model, _, self.allowed, self.field = SPEC[name]
        self.provider = name.split("-")[0]
        self.faults = list(faults)
        self.seen: list[dict] = []
        self.violations: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, payload, extra = fake.answer(self.path, self.headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path, headers, raw) -> tuple[int, object, dict]:
        if self.faults:
            status = self.faults.pop(0)
            return status, {"detail": f"fault {status}"}, {"Retry-After": "0"}
        problems = []
        if path != self.path:
            problems.append(f"path {path}")
        if headers.get("Authorization") != f"Bearer {KEY}":
            return 401, {"detail": "bad key " + str(headers.get("Authorization"))}, {}
        body = json.loads(raw)
        self.seen.append(body)
        if set(body) - self.allowed:
            problems.append(f"undocumented fields {sorted(set(body) - self.allowed)}")
        if body.get("model") != self.model:
            problems.append(f"model {body.get('model')!r}")
        docs = body.get("documents")
        if not isinstance(body.get("query"), str) or not body["query"]:
            problems.append("query must be a non-empty string")
        if (
            not isinstance(docs, list)
            or not 1 <= len(docs) <= 1000
            or not all(isinstance(d, str) for d in docs)
        ):
            problems.append("documents must be a list of 1..1000 strings")
        if problems:
            self.violations += problems
            return 400, {"detail": "; ".join(problems)}, {}
        rows = [
            {"index": i, "relevance_score": relevance(body["query"], d)} for i, d in enumerate(docs)
        ]
        rows.sort(key=lambda r: -r["relevance_score"])  # documented: best first
        if self.provider == "voyage":
            return (
                200,
                {
                    "object": "list",
                    "data": rows,
                    "model": self.model,
                    "usage": {"total_tokens": 10},
                },
                {},
            )
        return 200, {"id": "x", "results": rows, "meta": {"billed_units": {"search_units": 1}}}, {}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def item(query: str) -> BenchmarkItem:
    return BenchmarkItem(
        "strings/q",
        Path("q.toml"),
        "strings",
        query,
        "f",
        "def f():\n    pass\n",
        ("assert f() is None",),
    )


QUERIES = [
    RerankQuery(
        item("count the vowels"),
        (
            Candidate("a", "def f(s): return len(s)", 1, 0.9),
            Candidate(
                "b", "def f(s): # count the vowels\n    return sum(c in 'aeiou' for c in s)", 2, 0.8
            ),
            Candidate("c", "def f(s): # count\n    return 0", 3, 0.7),
        ),
    ),
    RerankQuery(
        item("add two numbers"), (Candidate("d", "def f(a, b): # add\n    return a", 1, 0.5),)
    ),
]


@pytest.fixture(params=sorted(SPEC))
def name(request) -> str:
    return request.param


@pytest.fixture
def keyed(monkeypatch, name):
    monkeypatch.setenv(SPEC[name][2], KEY)


def get(name: str, url: str, cache: Path | None = None, **extra):
    return _get(name, RerankerContext(cache_dir=cache, extra={"base_url": url, **extra}))


def test_documented_request_and_scores_by_index(name, keyed, tmp_path):
    fake = FakeReranker(name)
    try:
        reranker = get(name, fake.url)
        answers = reranker.rerank("bm25", QUERIES)
        reranker.close()
    finally:
        fake.stop()
    assert fake.violations == []
    assert [a.scores for a in answers] == [(0.0, 1.0, round(1 / 3, 4)), (round(1 / 3, 4),)]
    assert {b["query"] for b in fake.seen} == {"count the vowels", "add two numbers"}
    assert fake.seen[0]["documents"] in (
        [c.code for c in QUERIES[0].candidates],
        [c.code for c in QUERIES[1].candidates],
    )
    invocation = reranker.invocation()
    assert invocation["model"] == SPEC[name][1] and invocation["endpoint"] == SPEC[name][0]
    assert KEY not in json.dumps(invocation)


def test_retries_then_caches(name, keyed, tmp_path):
    fake = FakeReranker(name, faults=[429, 503])
    try:
        first = get(name, fake.url, tmp_path, concurrency=1, backoff_s=0.01)
        scores = [a.scores for a in first.rerank("bm25", QUERIES)]
        assert len(fake.seen) == 2  # the two faults were retried
        again = get(name, fake.url, tmp_path)
        answers = again.rerank("bm25", QUERIES)
    finally:
        fake.stop()
    assert len(fake.seen) == 2  # everything came from the cache
    assert [a.scores for a in answers] == scores
    assert [a.detail["requests"] for a in answers] == [0, 0]


def test_errors_name_the_cause_and_never_the_key(name, keyed, monkeypatch):
    fake = FakeReranker(name)
    try:
        monkeypatch.setenv(SPEC[name][2], KEY + "-wrong")
        with pytest.raises(RerankerError, match="HTTP 401") as raised:
            get(name, fake.url, max_attempts=1).rerank("bm25", QUERIES[:1])
        assert KEY not in str(raised.value) and "[redacted]" in str(raised.value)
    finally:
        fake.stop()
    monkeypatch.delenv(SPEC[name][2])
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(RerankerError, match=f"needs an API key: set {SPEC[name][2]}"):
        get(name, fake.url)


def test_a_malformed_answer_is_an_error(name, keyed):
    fake = FakeReranker(name)
    fake.answer = lambda *args: (200, {"unexpected": []}, {})
    try:
        with pytest.raises(RerankerError, match="malformed response"):
            get(name, fake.url).rerank("bm25", QUERIES[:1])
    finally:
        fake.stop()
