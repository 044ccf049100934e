"""HTTP for the hosted embedders: JSON POSTs with bounded retries and a shared rate limit.

Retried: HTTP 408, 429 and 5xx, connection errors and timeouts. The wait before a retry is the
server's ``Retry-After`` (seconds or an HTTP date) when given, else exponential backoff with jitter;
either is capped at ``max_delay_s``. Other failures end at once. Every message passes through
:meth:`Transport.redact`, so API keys (and passwords in a base URL) never reach an exception.
httpx is imported only when a transport is made.
"""

from __future__ import annotations

import email.utils
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from . import EmbedderError

HOSTED_EXTRA = "pip install 'pytest-execretrieval[hosted]'"
REDACTED = "[redacted]"
EXCERPT_CHARS = 300


@dataclass(frozen=True)
class HttpSettings:
    concurrency: int = 4  # requests in flight at once, per encode call
    requests_per_minute: float = 0.0  # client-side limit on request starts; 0: none
    max_attempts: int = 6  # per request, the first try included
    timeout_s: float = 60.0  # per attempt (connect, read, write, pool)
    backoff_s: float = 1.0  # the first retry waits 0.5-1x this, doubling per attempt
    max_delay_s: float = 120.0  # cap on any single wait, Retry-After included


# (field, EmbedderOptions.extra key, environment variable); extra wins over the environment.
SETTINGS = (
    ("concurrency", "concurrency", "EXECRETRIEVAL_HTTP_CONCURRENCY"),
    ("requests_per_minute", "requests_per_minute", "EXECRETRIEVAL_RPM"),
    ("max_attempts", "max_attempts", "EXECRETRIEVAL_HTTP_MAX_ATTEMPTS"),
    ("timeout_s", "timeout_s", "EXECRETRIEVAL_HTTP_TIMEOUT_S"),
    ("backoff_s", "backoff_s", "EXECRETRIEVAL_HTTP_BACKOFF_S"),
    ("max_delay_s", "max_delay_s", "EXECRETRIEVAL_HTTP_MAX_DELAY_S"),
)


def setting(
    extra: Mapping, key: str, env: str, kind: type, environ: Mapping[str, str] = os.environ
):
    """``extra[key]``, else ``$env``, converted to ``kind``; ``None`` when neither is set."""
    raw, source = extra.get(key), f"extra[{key!r}]"
    if raw is None or raw == "":
        raw, source = environ.get(env, "").strip(), f"${env}"
    if raw is None or raw == "":
        return None
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise EmbedderError(f"{source}: {raw!r} is not a valid {kind.__name__}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise EmbedderError(f"{source}: {raw!r} is not a finite number")
    return value


def http_settings(extra: Mapping, environ: Mapping[str, str] = os.environ) -> HttpSettings:
    defaults = HttpSettings()
    values = {}
    for field, key, env in SETTINGS:
        kind = type(getattr(defaults, field))
        value = setting(extra, key, env, kind, environ)
        if value is None:
            continue
        least = 0 if field == "requests_per_minute" else (1 if kind is int else 1e-9)
        if value < least:
            raise EmbedderError(f"{key} (extra[{key!r}] or ${env}) must be at least {least}, "
                                f"got {value}")  # fmt: skip
        values[field] = value
    return HttpSettings(**values)


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - now
    return max(0.0, seconds) if math.isfinite(seconds) else None


def backoff_delay(attempt: int, rng: random.Random, base: float, cap: float) -> float:
    """Exponential backoff with jitter after failed attempt ``attempt`` (1-based)."""
    ceiling = min(cap, base * 2 ** (attempt - 1))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


class RateLimiter:
    """Spaces request starts at least ``60 / rpm`` seconds apart, across threads."""

    def __init__(self, rpm: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):  # fmt: skip
        self.interval = 60.0 / rpm if rpm > 0 else 0.0
        self.clock, self.sleep = clock, sleep
        self._next = -math.inf
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self.clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self.sleep(start - now)


def excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def import_httpx():
    try:
        import httpx
    except ImportError:
        raise EmbedderError(f"the hosted embedders need httpx: {HOSTED_EXTRA}") from None
    return httpx


def retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


class Transport:
    """One httpx client for one embedder: ``post_json`` with retries, safe to share by threads."""

    def __init__(
        self, settings: HttpSettings, headers: Mapping[str, str], secrets: Iterable[str],
        sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self.httpx = import_httpx()
        self.settings = settings
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.sleep, self.clock = sleep, clock
        self.rng = rng or random.Random(0)
        self.limiter = RateLimiter(settings.requests_per_minute, sleep=sleep)
        self.client = self.httpx.Client(timeout=settings.timeout_s, headers=dict(headers))

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def fail(self, message: str) -> EmbedderError:
        return EmbedderError(self.redact(message))

    def body(self, response) -> str:
        return repr(excerpt(self.redact(response.text)))  # redact first: no half-cut secret

    def post_json(self, url: str, body: dict, label: str) -> object:
        """The decoded JSON of a 2xx answer; :class:`EmbedderError` naming ``label`` otherwise."""
        httpx, s = self.httpx, self.settings
        last = ""
        for attempt in range(1, s.max_attempts + 1):
            wait = None
            self.limiter.wait()
            try:
                response = self.client.post(url, json=body)
            except httpx.TimeoutException as exc:
                last = f"{type(exc).__name__} (no answer within {s.timeout_s:g} s)"
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                last = f"connection error: {type(exc).__name__}: {self.redact(str(exc))}"
            except httpx.HTTPError as exc:  # bad URL, proxy, protocol: retrying cannot help
                raise self.fail(f"{label}: {type(exc).__name__}: {self.redact(str(exc))}") from None
            else:
                status = response.status_code
                if 200 <= status < 300:
                    try:
                        return response.json()
                    except ValueError:
                        raise self.fail(f"{label}: HTTP {status} but the body is not JSON: "
                                        f"{self.body(response)}") from None  # fmt: skip
                last = f"HTTP {status}: {self.body(response)}"
                if not retryable(status):
                    raise self.fail(f"{label}: {last} (not retried)")
                wait = retry_after_seconds(response.headers.get("retry-after"), self.clock())
            if attempt < s.max_attempts:
                if wait is None:
                    wait = backoff_delay(attempt, self.rng, s.backoff_s, s.max_delay_s)
                self.sleep(min(wait, s.max_delay_s))
        raise self.fail(f"{label}: failed {s.max_attempts} time(s) (max_attempts "
                        f"{s.max_attempts}); last: {last}")  # fmt: skip

    def close(self) -> None:
        self.client.close()
