"""Hosted rerank APIs: Voyage ``rerank-2.5`` and Cohere ``rerank-v3.5`` over HTTP (needs httpx:
``pip install 'pytest-execretrieval[hosted]'``; imported only once one is chosen).

===================  ==========  ===============  ========================================
name                 model       endpoint         API key (environment)
===================  ==========  ===============  ========================================
voyage-rerank-2.5    rerank-2.5  POST /v1/rerank  VOYAGE_API_KEY
cohere-rerank-v3.5   rerank-v3.5 POST /v2/rerank  CO_API_KEY (or COHERE_API_KEY)
===================  ==========  ===============  ========================================

One request per query: the query text and the candidates' code as ``documents``; the answer's
``relevance_score`` per ``index`` is the candidate's score. They read the query and the code
only. Retries, rate limit, timeouts and key redaction are the hosted embedders'
(:mod:`..embedders.hosted_http`, the same ``extra`` keys and environment variables); the base
URL is ``extra["base_url"]`` or ``EXECRETRIEVAL_VOYAGE_BASE_URL`` /
``EXECRETRIEVAL_COHERE_BASE_URL``. Scores are cached per (model, query, document) under
``<cache dir>/rerank/<name>.jsonl`` (a relevance score does not depend on the other documents of
the request), so a re-run sends only what is new. Only model, endpoint and the scheme and host of
the base URL enter :meth:`HostedReranker.invocation`; never the key.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ...embedders import EmbedderError, ServiceError, package_versions
from ...embedders.hosted import BYTES, parse_base_url
from ...embedders.hosted_http import Transport, http_settings, import_httpx
from ...safe_write import append_text
from .base import Reranked, RerankerContext, RerankerError, RerankQuery


@dataclass(frozen=True)
class RerankApi:
    name: str
    provider: str
    model: str
    path: str
    default_base: str
    base_env: str
    key_vars: tuple[str, ...]
    results_field: str  # the response's list of {index, relevance_score}
    documentation: str
    fixed_fields: tuple[tuple[str, object], ...] = ()


APIS = {
    "voyage-rerank-2.5": RerankApi(
        "voyage-rerank-2.5",
        "voyage",
        "rerank-2.5",
        "/v1/rerank",
        "https://api.voyageai.com",
        "EXECRETRIEVAL_VOYAGE_BASE_URL",
        ("VOYAGE_API_KEY",),
        "data",
        "https://docs.voyageai.com/reference/reranker-api",
        (("truncation", True),),
    ),
    "cohere-rerank-v3.5": RerankApi(
        "cohere-rerank-v3.5",
        "cohere",
        "rerank-v3.5",
        "/v2/rerank",
        "https://api.cohere.com",
        "EXECRETRIEVAL_COHERE_BASE_URL",
        ("CO_API_KEY", "COHERE_API_KEY"),
        "results",
        "https://docs.cohere.com/reference/rerank",
    ),
}


class ScoreCache:
    """(model, query, document) -> score, one JSON line per score, appended as answers come."""

    def __init__(self, path: Path | None):
        self.path = path
        self.scores: dict[str, float] = {}
        self._lock = threading.Lock()
        if path is not None and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.scores[row["key"]] = float(row["score"])
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line: that score is fetched again

    @staticmethod
    def key(model: str, query: str, document: str) -> str:
        return hashlib.sha256(json.dumps([model, query, document]).encode()).hexdigest()

    def put(self, items: dict[str, float]) -> None:
        with self._lock:
            self.scores.update(items)
            if self.path is not None:
                append_text(
                    self.path,
                    "".join(json.dumps({"key": k, "score": v}) + "\n" for k, v in items.items()),
                )


class HostedReranker:
    def __init__(self, api: RerankApi, context: RerankerContext):
        self.api, self.name = api, api.name
        extra = dict(context.extra)
        try:
            self.http = http_settings(extra)
            base = extra.get("base_url") or os.environ.get(api.base_env, "").strip()
            source = "extra['base_url']" if extra.get("base_url") else f"${api.base_env}"
            self.base = parse_base_url(base or api.default_base, source)
        except EmbedderError as exc:
            raise RerankerError(f"{self.name}: {exc}") from None
        cache = (
            Path(context.cache_dir) / "rerank" / f"{api.name}.jsonl" if context.cache_dir else None
        )
        self.cache = ScoreCache(cache)
        self._transport: Transport | None = None
        self.check_usable()  # before any first stage runs: a missing key or httpx stops at once

    def api_key(self) -> str:
        for var in self.api.key_vars:
            key = os.environ.get(var, "").strip()
            if key:
                return key
        raise RerankerError(f"{self.name} needs an API key: set {' or '.join(self.api.key_vars)}")

    def check_usable(self) -> None:
        try:
            import_httpx()
        except EmbedderError as exc:
            raise RerankerError(str(exc)) from None
        self.api_key()

    def invocation(self) -> dict:
        return {
            "name": self.name,
            "provider": self.api.provider,
            "model": self.api.model,
            "api_base": self.base.public,
            "endpoint": self.api.path,
            "documentation": self.api.documentation,
            "set_aware": True,  # the service is sent the candidates together
            "package_versions": package_versions("httpx"),
        }

    def transport(self) -> Transport:
        if self._transport is None:
            key = self.api_key()
            self._transport = Transport(
                self.http, {"Authorization": f"Bearer {key}"}, (key, *self.base.secrets)
            )
        return self._transport

    def body(self, query: str, documents: Sequence[str]) -> dict:
        return {
            "model": self.api.model,
            "query": query,
            "documents": list(documents),
            **dict(self.api.fixed_fields),
        }

    def parse(self, payload: object, n: int, label: str) -> list[float]:
        try:
            rows = payload[self.api.results_field]  # type: ignore[index]
            scores = {int(r["index"]): float(r["relevance_score"]) for r in rows}
        except (KeyError, TypeError, ValueError) as exc:
            raise RerankerError(
                f"{label}: malformed response ({type(exc).__name__}: {exc}); "
                f"expected {self.api.results_field!r}: [{{index, "
                "relevance_score}}]"
            ) from None
        if sorted(scores) != list(range(n)) or not all(map(math.isfinite, scores.values())):
            raise RerankerError(
                f"{label}: expected one finite relevance_score for each of the "
                f"{n} documents, got indices {sorted(scores)[:12]}"
            )
        return [scores[i] for i in range(n)]

    def one(self, q: RerankQuery, i: int, total: int) -> Reranked:
        docs = [c.code for c in q.candidates]
        keys = [ScoreCache.key(self.api.model, q.item.query, d) for d in docs]
        if all(k in self.cache.scores for k in keys):
            return Reranked(
                tuple(self.cache.scores[k] for k in keys),
                None,
                {"requests": 0, "estimated_tokens": 0},
            )
        label = f"{self.name} (query {i + 1}/{total}, {q.item.id})"
        try:
            payload = self.transport().post_json(
                self.base.url + self.api.path, self.body(q.item.query, docs), label
            )
        except ServiceError:
            raise  # the provider's failure, not the reranker's setup (exit 8)
        except EmbedderError as exc:
            raise RerankerError(str(exc)) from None
        scores = self.parse(payload, len(docs), label)
        self.cache.put(dict(zip(keys, scores)))
        # UTF-8 bytes: never fewer than the provider's tokens (as the hosted embedders count)
        tokens = BYTES.count(q.item.query) * len(docs) + sum(map(BYTES.count, docs))
        return Reranked(tuple(scores), None, {"requests": 1, "estimated_tokens": tokens})

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]:
        workers = max(1, min(self.http.concurrency, len(queries)))
        with ThreadPoolExecutor(workers, thread_name_prefix=f"execretrieval-{self.name}") as pool:
            return list(
                pool.map(lambda iq: self.one(iq[1], iq[0], len(queries)), enumerate(queries))
            )

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None


def hosted_reranker(name: str, context: RerankerContext) -> HostedReranker:
    return HostedReranker(APIS[name], context)
