"""HTTP for the hosted embedders: JSON POSTs with bounded retries, a shared rate limit, fail-fast
cancellation and secret-free logs.

Retry rules, as the providers' official SDKs apply them:

- an ``x-should-retry: true`` / ``false`` header decides first;
- otherwise HTTP 408, 409, 429 and 5xx are retried (not 501 Not Implemented or 505 HTTP Version
  Not Supported: retrying cannot change those), as are connection errors and timeouts; every other
  answer ends the encode at once;
- the wait is the server's hint when it gives one: ``retry-after-ms``, ``Retry-After`` (seconds
  or an HTTP date) or, in a Gemini error body, the ``google.rpc.RetryInfo`` ``retryDelay`` (the
  longest of those present). A hint of 0 still backs off (exponential with jitter, as without a
  hint). A hint longer than ``max_delay_s`` is not shortened: the request gives up with the
  provider's message, since retrying early only spends quota;
- a Gemini 429 whose ``google.rpc.QuotaFailure`` names a per-day quota ends at once: no retry
  within a run can outlast it;
- a 400/413 whose message says the input or batch is too long raises :class:`TooLong`, so the
  caller can split the batch;
- ``max_attempts`` is at most :data:`MAX_ATTEMPTS`, and the default schedule (8 attempts, 1 s
  doubling, jitter 0.5-1x) waits 63.5-127 s in all, longer than a per-minute quota window.

A non-retryable failure of one request cancels the others of the same encode (see
:class:`Transport`). Every message passes through :meth:`Transport.redact`, so API keys and base-URL
passwords never reach an exception, and a filter on httpx's logger removes them (and any
``user:password@`` in a URL) from its log lines. httpx is imported only when a transport is made.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from . import EmbedderError, ServiceError

HOSTED_EXTRA = "pip install 'pytest-execretrieval[hosted]'"
REDACTED = "[redacted]"
EXCERPT_CHARS = 300
MAX_ATTEMPTS = 100  # upper bound of max_attempts: more only hides a broken endpoint
MAX_EXPONENT = 60  # backoff doubles at most this often (2**60 s is far past any cap)
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
TOO_LONG = re.compile(  # the providers' 400s for an over-long input or batch
    r"too many tokens|too many inputs|maximum context length|too long|token limit|"
    r"tokens per (?:request|submitted batch)|max allowed tokens|batch size limit|"
    r"at most \d+ requests|exceeds the (?:maximum|limit)|payload size|request too large|"
    r"input length",
    re.IGNORECASE,
)
USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy")


class FatalError(EmbedderError):
    """A failure retrying cannot help: the encode stops and cancels its other requests."""


class TooLong(FatalError):
    """The provider answered that the request's input or batch is too long."""


class Cancelled(EmbedderError):
    """Another request of the same encode failed first; this one stopped without a result."""


@dataclass(frozen=True)
class HttpSettings:
    concurrency: int = 4  # requests in flight at once, per encode call
    requests_per_minute: float = 0.0  # client-side limit on request starts; 0: none
    max_attempts: int = 8  # per request, the first try included (at most MAX_ATTEMPTS)
    timeout_s: float = 60.0  # per attempt (connect, read, write, pool)
    backoff_s: float = 1.0  # the first retry waits 0.5-1x this, doubling per attempt
    max_delay_s: float = 120.0  # cap on any single wait; a longer server hint means give up


# (field, EmbedderOptions.extra key, environment variable); extra wins over the environment.
SETTINGS = (
    ("concurrency", "concurrency", "EXECRETRIEVAL_HTTP_CONCURRENCY"),
    ("requests_per_minute", "requests_per_minute", "EXECRETRIEVAL_RPM"),
    ("max_attempts", "max_attempts", "EXECRETRIEVAL_HTTP_MAX_ATTEMPTS"),
    ("timeout_s", "timeout_s", "EXECRETRIEVAL_HTTP_TIMEOUT_S"),
    ("backoff_s", "backoff_s", "EXECRETRIEVAL_HTTP_BACKOFF_S"),
    ("max_delay_s", "max_delay_s", "EXECRETRIEVAL_HTTP_MAX_DELAY_S"),
)
UPPER = {"max_attempts": MAX_ATTEMPTS}


def option_or_env(
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
        value = option_or_env(extra, key, env, kind, environ)
        if value is None:
            continue
        least = 0 if field == "requests_per_minute" else (1 if kind is int else 1e-9)
        if value < least:
            raise EmbedderError(
                f"{key} (extra[{key!r}] or ${env}) must be at least {least}, got {value}"
            )
        if field in UPPER and value > UPPER[field]:
            raise EmbedderError(
                f"{key} (extra[{key!r}] or ${env}) must be at most {UPPER[field]}, got {value}"
            )
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


def error_details(payload: object) -> list[dict]:
    """The ``error.details`` entries of a Google-style error body (empty for any other body)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def retry_info_seconds(payload: object) -> float | None:
    """The ``retryDelay`` of a ``google.rpc.RetryInfo`` detail (a JSON Duration such as ``"37s"``
    or ``"0.5s"``), in seconds."""
    for detail in error_details(payload):
        if detail.get("@type") == RETRY_INFO:
            match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)s\s*", str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def daily_quota(payload: object) -> str | None:
    """The quota id of a per-day ``google.rpc.QuotaFailure`` violation, if the body has one."""
    for detail in error_details(payload):
        if detail.get("@type") != QUOTA_FAILURE:
            continue
        for violation in detail.get("violations") or []:
            if not isinstance(violation, dict):
                continue
            name = f"{violation.get('quotaId', '')} {violation.get('quotaMetric', '')}"
            if re.search(r"per ?day|daily|per_day", name, re.IGNORECASE):
                return str(violation.get("quotaId") or violation.get("quotaMetric"))
    return None


def server_delay(headers: Mapping[str, str], payload: object, now: float) -> float | None:
    """The longest wait the server asks for: ``retry-after-ms``, ``Retry-After``, Gemini's
    ``RetryInfo``; ``None`` when it gives none."""
    hints = []
    try:
        ms = float(headers.get("retry-after-ms", ""))
        if math.isfinite(ms):
            hints.append(max(0.0, ms / 1000))
    except ValueError:
        pass
    for hint in (retry_after_seconds(headers.get("retry-after"), now), retry_info_seconds(payload)):
        if hint is not None:
            hints.append(hint)
    return max(hints) if hints else None


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """``x-should-retry`` when the server sends it, else the status: 408, 409, 429, 5xx but not
    501 or 505."""
    flag = headers.get("x-should-retry", "").strip().lower()
    if flag in ("true", "false"):
        return flag == "true"
    return status in (408, 409, 429) or (status >= 500 and status not in (501, 505))


def backoff_delay(attempt: int, rng: random.Random, base: float, cap: float) -> float:
    """Exponential backoff with jitter after failed attempt ``attempt`` (1-based): 0.5-1x of
    ``min(cap, base * 2**(attempt - 1))``; defined for any attempt number."""
    ceiling = min(cap, base * 2.0 ** min(attempt - 1, MAX_EXPONENT))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


class RateLimiter:
    """Spaces request starts at least ``60 / rpm`` seconds apart, across threads."""

    def __init__(
        self,
        rpm: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
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


class RedactingFilter(logging.Filter):
    """Rewrites log records of the HTTP client without the given secrets or URL userinfo."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return USERINFO.sub(REDACTED + "@", text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


class Transport:
    """One httpx client for one embedder: ``post_json`` with retries, safe to share by threads.

    ``auth`` is a (user, password) pair for HTTP basic auth (from a base URL's userinfo: sent as
    a header, never in the URL, so no log line shows it). ``sleep`` replaces the waits (tests);
    by default a wait ends early when the call's ``cancel`` event is set. ``sent`` counts the
    HTTP requests made (every attempt)."""

    def __init__(
        self,
        settings: HttpSettings,
        headers: Mapping[str, str],
        secrets: Iterable[str],
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        auth: tuple[str, str] | None = None,
    ) -> None:
        self.httpx = import_httpx()
        self.settings = settings
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.sleep, self.clock = sleep, clock
        self.rng = rng or random.Random(0)
        self.limiter = RateLimiter(settings.requests_per_minute, sleep=sleep or time.sleep)
        self.client = self.httpx.Client(
            timeout=settings.timeout_s,
            headers=dict(headers),
            auth=self.httpx.BasicAuth(*auth) if auth else None,
        )
        self.sent = 0
        self._count = threading.Lock()
        self.log_filter = RedactingFilter(self.secrets)
        for name in LOGGERS:
            logging.getLogger(name).addFilter(self.log_filter)

    def redact(self, text: str) -> str:
        return self.log_filter.redact(text)

    def fail(self, message: str, kind: type[EmbedderError] = FatalError) -> EmbedderError:
        return kind(self.redact(message))

    def body(self, response) -> str:
        return repr(excerpt(self.redact(response.text)))  # redact first: no half-cut secret

    def pause(self, seconds: float, cancel: threading.Event, label: str) -> None:
        if self.sleep is not None:
            self.sleep(seconds)
        else:
            cancel.wait(seconds)
        if cancel.is_set():
            raise Cancelled(f"{label}: cancelled (another request failed)")

    def post_json(
        self, url: str, body: dict, label: str, cancel: threading.Event | None = None
    ) -> object:
        """The decoded JSON of a 2xx answer. Otherwise :class:`FatalError` (or :class:`TooLong`)
        naming ``label`` when retrying cannot help, :class:`EmbedderError` after the last
        attempt, :class:`Cancelled` as soon as ``cancel`` is set."""
        httpx, s = self.httpx, self.settings
        cancel = cancel or threading.Event()
        last = ""
        for attempt in range(1, s.max_attempts + 1):
            if cancel.is_set():
                raise Cancelled(f"{label}: cancelled (another request failed)")
            hint = None
            self.limiter.wait()
            with self._count:
                self.sent += 1
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
                        raise self.fail(
                            f"{label}: HTTP {status} but the body is not JSON: "
                            f"{self.body(response)}"
                        ) from None
                hint = self.check_failure(response, label, attempt)
                last = f"HTTP {status}: {self.body(response)}"
            if attempt < s.max_attempts:
                wait = (
                    hint if hint else backoff_delay(attempt, self.rng, s.backoff_s, s.max_delay_s)
                )
                self.pause(min(wait, s.max_delay_s), cancel, label)
        raise self.fail(
            f"{label}: failed {s.max_attempts} time(s) (max_attempts "
            f"{s.max_attempts}); last: {last}",
            ServiceError,
        )

    def check_failure(self, response, label: str, attempt: int) -> float | None:
        """Raise for an answer that must not be retried; else the server's wait hint."""
        status, headers = response.status_code, response.headers
        try:
            payload = json.loads(response.text)
        except ValueError:
            payload = None
        last = f"HTTP {status}: {self.body(response)}"
        if status in (400, 413) and TOO_LONG.search(response.text):
            raise self.fail(f"{label}: {last} (too long)", TooLong)
        quota = daily_quota(payload) if status == 429 else None
        if quota:
            raise self.fail(
                f"{label}: {last}: the daily quota {quota} is used up; retrying "
                "cannot help before it resets (tomorrow, Pacific time for Gemini), "
                "or raise the quota"
            )
        if not should_retry(status, headers):
            reason = "x-should-retry: false" if should_retry(status, {}) else "not retried"
            raise self.fail(f"{label}: {last} ({reason})")
        hint = server_delay(headers, payload, self.clock())
        if hint is not None and hint > self.settings.max_delay_s:
            raise self.fail(
                f"{label}: {last}: the provider asks to wait {hint:g} s before retrying, longer "
                f"than max_delay_s {self.settings.max_delay_s:g} (attempt {attempt}); giving up "
                "rather than retrying early (raise EXECRETRIEVAL_HTTP_MAX_DELAY_S to wait)"
            )
        return hint

    def close(self) -> None:
        self.client.close()
        for name in LOGGERS:
            logging.getLogger(name).removeFilter(self.log_filter)
