"""Hosted-API embedders: Gemini, OpenAI, Voyage and Mistral over HTTP (needs httpx:
``pip install 'pytest-execretrieval[hosted]'``; it is imported only once one is chosen).

=================  ======================  =========================================
name               model                   API key (environment)
=================  ======================  =========================================
gemini-2           gemini-embedding-2      GEMINI_API_KEY (or GOOGLE_API_KEY)
gemini-001         gemini-embedding-001    GEMINI_API_KEY (or GOOGLE_API_KEY)
openai-3-large     text-embedding-3-large  OPENAI_API_KEY
openai-3-small     text-embedding-3-small  OPENAI_API_KEY
voyage-code-3      voyage-code-3           VOYAGE_API_KEY
codestral-embed    codestral-embed         MISTRAL_API_KEY
=================  ======================  =========================================

Settings: ``EmbedderOptions.extra`` keys first, then the environment variable.

- ``dimensions`` / ``EXECRETRIEVAL_EMBED_DIMENSIONS``: output dimension (default: the model's
  documented default, and then none is sent);
- ``base_url`` / ``EXECRETRIEVAL_{GEMINI,OPENAI,VOYAGE,MISTRAL}_BASE_URL``: API base URL;
- ``concurrency`` / ``EXECRETRIEVAL_HTTP_CONCURRENCY`` (default 4): requests in flight at once;
- ``requests_per_minute`` / ``EXECRETRIEVAL_RPM`` (default 0, no limit): client-side rate limit;
- ``max_attempts`` / ``EXECRETRIEVAL_HTTP_MAX_ATTEMPTS`` (default 6): tries per request;
- ``timeout_s`` / ``EXECRETRIEVAL_HTTP_TIMEOUT_S`` (default 60): per attempt;
- ``backoff_s`` / ``EXECRETRIEVAL_HTTP_BACKOFF_S`` (1) and ``max_delay_s`` /
  ``EXECRETRIEVAL_HTTP_MAX_DELAY_S`` (120): retry waits (see :mod:`.hosted_http`).
``--execretrieval-batch-size`` lowers the texts per request below the provider's limit.

Only what shapes the vectors enters :meth:`HostedEmbedder.invocation` (the cache key): model,
dimension, prefixes or task types, scheme and host of the base URL, endpoint path, batch size.
Never the key, a base-URL path or password, or the HTTP settings. Vectors are validated (count,
order, dimension, finite, non-zero) and L2-normalised here, whatever the API promises.
"""

from __future__ import annotations

import functools
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from . import ROLES, Embedder, EmbedderError, EmbedderOptions, check_vectors, describe
from .hosted_http import Transport, http_settings, import_httpx, setting

DIMENSIONS_ENV = "EXECRETRIEVAL_EMBED_DIMENSIONS"
CHARS_PER_TOKEN = 2  # cautious floor: a character budget of tokens x this stays under the limit

GEMINI_DOCS = "https://ai.google.dev/gemini-api/docs/embeddings"
OPENAI_DOCS = "https://platform.openai.com/docs/api-reference/embeddings/create"
VOYAGE_DOCS = "https://docs.voyageai.com/reference/embeddings-api"
MISTRAL_DOCS = "https://docs.mistral.ai/api/endpoint/embeddings"


@dataclass(frozen=True)
class Api:
    """What one provider's embedders share."""

    provider: str
    default_base: str
    base_env: str
    key_vars: tuple[str, ...]
    dim_field: str  # request field of the output dimension
    limits: str  # where the batch limits come from


@dataclass(frozen=True)
class Spec:
    name: str
    api: Api
    model: str
    default_dim: int
    max_dim: int
    max_batch: int  # texts per request
    documentation: str
    dim_choices: tuple[int, ...] = ()  # when only these dimensions are accepted
    query_prefix: str = ""
    document_prefix: str = ""
    role_field: str = ""  # request field naming the role, e.g. taskType or input_type
    role_values: tuple[str, str] = ("", "")  # its value for queries, for documents
    max_request_tokens: int = 0  # documented total per request; 0: none documented
    fixed_fields: tuple[tuple[str, object], ...] = ()  # sent with every request


GEMINI = Api(
    "gemini", "https://generativelanguage.googleapis.com", "EXECRETRIEVAL_GEMINI_BASE_URL",
    ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "outputDimensionality",
    "batchEmbedContents takes at most 100 requests (the API answers 400 'at most 100 requests "
    "can be in one batch'; https://ai.google.dev/api/embeddings); embeddings come back in "
    "request order",
)  # fmt: skip
OPENAI = Api(
    "openai", "https://api.openai.com", "EXECRETRIEVAL_OPENAI_BASE_URL", ("OPENAI_API_KEY",),
    "dimensions", f"at most 2048 inputs and 300,000 tokens per request ({OPENAI_DOCS})",
)  # fmt: skip
VOYAGE = Api(
    "voyage", "https://api.voyageai.com", "EXECRETRIEVAL_VOYAGE_BASE_URL", ("VOYAGE_API_KEY",),
    "output_dimension", f"at most 1,000 inputs and 120K tokens per request for voyage-code-3 "
    f"({VOYAGE_DOCS})",
)  # fmt: skip
MISTRAL = Api(
    "mistral", "https://api.mistral.ai", "EXECRETRIEVAL_MISTRAL_BASE_URL", ("MISTRAL_API_KEY",),
    "output_dimension", f"no input count is documented ({MISTRAL_DOCS}); the API rejects large "
    "batches ('Too many inputs in request' / 'Too many tokens in batch. Max is 16384'), so at "
    "most 128 inputs and ~16K tokens per request are sent",
)  # fmt: skip

SPECS = (
    Spec("gemini-2", GEMINI, "gemini-embedding-2", 3072, 3072, 100, GEMINI_DOCS,
         query_prefix="task: code retrieval | query: ", document_prefix="title: none | text: "),
    Spec("gemini-001", GEMINI, "gemini-embedding-001", 3072, 3072, 100, GEMINI_DOCS,
         role_field="taskType", role_values=("CODE_RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT")),
    Spec("openai-3-large", OPENAI, "text-embedding-3-large", 3072, 3072, 2048, OPENAI_DOCS,
         max_request_tokens=300_000, fixed_fields=(("encoding_format", "float"),)),
    Spec("openai-3-small", OPENAI, "text-embedding-3-small", 1536, 1536, 2048, OPENAI_DOCS,
         max_request_tokens=300_000, fixed_fields=(("encoding_format", "float"),)),
    Spec("voyage-code-3", VOYAGE, "voyage-code-3", 1024, 2048, 1000, VOYAGE_DOCS,
         dim_choices=(256, 512, 1024, 2048), role_field="input_type",
         role_values=("query", "document"), max_request_tokens=120_000),
    Spec("codestral-embed", MISTRAL, "codestral-embed", 1536, 3072, 128, MISTRAL_DOCS,
         max_request_tokens=16_384),
)  # fmt: skip


@dataclass(frozen=True)
class BaseUrl:
    url: str  # what requests go to (may hold a path prefix or user:password)
    public: str  # scheme://host[:port], for invocations and messages
    secrets: tuple[str, ...]  # userinfo to redact from messages


def parse_base_url(raw: str, source: str) -> BaseUrl:
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderError(f"{source}: base URL must be http(s)://host[:port][/path], "
                            f"got scheme {parts.scheme!r}")  # fmt: skip
    if parts.query or parts.fragment:
        raise EmbedderError(f"{source}: base URL must not have a query or fragment "
                            "(keys go in the environment, not the URL)")  # fmt: skip
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    public = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    secrets = tuple(s for s in (parts.password, parts.username) if s)
    return BaseUrl(raw.strip().rstrip("/"), public, secrets)


def split_batches(texts: Sequence[str], max_count: int, max_chars: int = 0) -> list[range]:
    """Consecutive index ranges of at most ``max_count`` texts and, when ``max_chars`` is set,
    at most that many characters (a longer text goes alone)."""
    batches, start, chars = [], 0, 0
    for i, text in enumerate(texts):
        if i > start and (i - start >= max_count or (max_chars and chars + len(text) > max_chars)):
            batches.append(range(start, i))
            start, chars = i, 0
        chars += len(text)
    if len(texts) > start:
        batches.append(range(start, len(texts)))
    return batches


class HostedEmbedder(Embedder):
    """Shared by all providers: settings, key, batching, retries, validation, normalisation."""

    def __init__(self, options: EmbedderOptions, spec: Spec):
        self.spec, self.api, self.name = spec, spec.api, spec.name
        extra = dict(options.extra)
        self.requested_dim = setting(extra, "dimensions", DIMENSIONS_ENV, int)
        self.dim = self.requested_dim or spec.default_dim
        self._check_dim()
        self.batch_size = min(options.batch_size or spec.max_batch, spec.max_batch)
        self.max_chars = spec.max_request_tokens * CHARS_PER_TOKEN
        self.http = http_settings(extra)
        base = extra.get("base_url") or os.environ.get(self.api.base_env, "").strip()
        source = "extra['base_url']" if extra.get("base_url") else f"${self.api.base_env}"
        self.base = parse_base_url(base or self.api.default_base, source)
        self.sleep = time.sleep  # tests replace these before the first encode
        self.rng = random.Random(0)
        self._transport: Transport | None = None

    def _check_dim(self) -> None:
        spec, dim = self.spec, self.requested_dim
        if dim is None:
            return
        if spec.dim_choices and dim not in spec.dim_choices:
            raise EmbedderError(f"{self.name}: output dimension {dim} is not one of "
                                f"{', '.join(map(str, spec.dim_choices))}")  # fmt: skip
        if not 1 <= dim <= spec.max_dim:
            raise EmbedderError(f"{self.name}: output dimension {dim} is outside 1..{spec.max_dim}")

    # -- per provider ------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return "/v1/embeddings"

    def headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def request_body(self, texts: Sequence[str], role: str) -> dict:
        raise NotImplementedError

    def parse(self, payload: object, n: int) -> list:
        raise NotImplementedError

    @staticmethod
    def rows(payload: object, key: str, n: int) -> list:
        """``payload[key]``, checked to be a list of one row per text."""
        rows = payload[key]
        if not isinstance(rows, list):
            raise TypeError(f"{key!r} is not a list")
        if len(rows) != n:
            raise ValueError(f"{len(rows)} embeddings for {n} texts")
        return rows

    def role_fields(self, role: str) -> dict:
        if not self.spec.role_field:
            return {}
        return {self.spec.role_field: self.spec.role_values[ROLES.index(role)]}

    def dim_fields(self) -> dict:
        return {self.api.dim_field: self.requested_dim} if self.requested_dim else {}

    def prefixed(self, texts: Sequence[str], role: str) -> list[str]:
        prefix = self.spec.query_prefix if role == "query" else self.spec.document_prefix
        return [prefix + t for t in texts]

    # -- the protocol ------------------------------------------------------------------------
    def api_key(self) -> str:
        for var in self.api.key_vars:
            key = os.environ.get(var, "").strip()
            if key:
                return key
        wanted = " (or ".join(self.api.key_vars) + ")" * (len(self.api.key_vars) - 1)
        raise EmbedderError(f"{self.name} needs an API key: set {wanted}")

    def check_usable(self) -> None:
        import_httpx()
        self.api_key()

    def invocation(self) -> dict:
        spec = self.spec
        return describe(
            self.name, spec.model, self.dim, query_prefix=spec.query_prefix,
            document_prefix=spec.document_prefix, normalize=True, batch_size=self.batch_size,
            packages=["httpx"], provider=self.api.provider, api_base=self.base.public,
            endpoint=self.path, task_field=spec.role_field or None,
            task_values=dict(zip(ROLES, spec.role_values)) if spec.role_field else None,
            dimension_field=self.api.dim_field, dimension_sent=self.requested_dim,
            normalization="L2, client side, after validation",
            documentation=spec.documentation, batch_limits=self.api.limits,
        )  # fmt: skip

    def transport(self) -> Transport:
        if self._transport is None:
            key = self.api_key()
            self._transport = Transport(self.http, self.headers(key), (key, *self.base.secrets),
                                        sleep=lambda s: self.sleep(s), rng=self.rng)  # fmt: skip
        return self._transport

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        if role not in ROLES:
            raise EmbedderError(f"{self.name}: unknown role {role!r}")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        transport = self.transport()
        batches = split_batches(self.prefixed(texts, role), self.batch_size, self.max_chars)
        url = self.base.url + self.path

        def run(i: int) -> np.ndarray:
            rows = batches[i]
            label = (f"{self.name} ({self.api.provider} {self.spec.model}, {role} request "
                     f"{i + 1}/{len(batches)}, texts {rows.start}-{rows.stop - 1})")  # fmt: skip
            payload = transport.post_json(url, self.request_body(texts[rows.start:rows.stop], role),
                                          label)  # fmt: skip
            return self.vectors(payload, len(rows), label)

        workers = min(self.http.concurrency, len(batches))
        if workers == 1:
            return np.vstack([run(i) for i in range(len(batches))])
        pool = ThreadPoolExecutor(workers, thread_name_prefix=f"execretrieval-{self.name}")
        try:
            futures = [pool.submit(run, i) for i in range(len(batches))]
            return np.vstack([f.result() for f in futures])  # in request order
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def vectors(self, payload: object, n: int, label: str) -> np.ndarray:
        try:
            rows = self.parse(payload, n)
            matrix = np.asarray(rows, dtype=np.float64)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise EmbedderError(
                f"{label}: malformed response ({type(exc).__name__}: {exc}); "
                f"expected {n} embeddings of dimension {self.dim}"
            ) from None
        check_vectors(matrix, n, label, self.dim)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix.astype(np.float32)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None


class GeminiEmbedder(HostedEmbedder):
    """``models/{model}:batchEmbedContents`` with the key in ``x-goog-api-key``."""

    @property
    def path(self) -> str:
        return f"/v1beta/models/{self.spec.model}:batchEmbedContents"

    def headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def request_body(self, texts: Sequence[str], role: str) -> dict:
        extra = {**self.role_fields(role), **self.dim_fields()}
        return {"requests": [
            {"model": f"models/{self.spec.model}", "content": {"parts": [{"text": t}]}, **extra}
            for t in self.prefixed(texts, role)
        ]}  # fmt: skip

    def parse(self, payload: object, n: int) -> list:
        return [e["values"] for e in self.rows(payload, "embeddings", n)]


class OpenAIStyleEmbedder(HostedEmbedder):
    """``POST /v1/embeddings`` answering ``{"data": [{"index", "embedding"}]}`` (OpenAI, Voyage,
    Mistral); rows are put back in order by ``index``."""

    def request_body(self, texts: Sequence[str], role: str) -> dict:
        return {
            "model": self.spec.model,
            "input": self.prefixed(texts, role),
            **self.role_fields(role),
            **self.dim_fields(),
            **dict(self.spec.fixed_fields),
        }

    def parse(self, payload: object, n: int) -> list:
        by_index = {item["index"]: item["embedding"] for item in self.rows(payload, "data", n)}
        if sorted(by_index) != list(range(n)):
            raise ValueError(f"indices {sorted(by_index)[:8]} are not 0..{n - 1}")
        return [by_index[i] for i in range(n)]


def factory(spec: Spec):
    cls = GeminiEmbedder if spec.api is GEMINI else OpenAIStyleEmbedder
    return functools.partial(cls, spec=spec)


FACTORIES = {spec.name: factory(spec) for spec in SPECS}
