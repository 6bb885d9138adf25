"""Posting JSON to the gateway with retries: transport errors, 5xx and 429 (honouring `Retry-After`) are retried with
capped exponential backoff; any other 4xx is final."""

from __future__ import annotations

import email.utils
import json
import random
import time
import urllib.error
import urllib.request
from typing import Any

from .env import AgentEnv


class EmitFailed(RuntimeError):
    """The gateway refused a post (4xx other than 429), or kept failing after every retry."""

    def __init__(self, message: str, status: int | None):
        super().__init__(message)
        self.status = status
        """HTTP status of the last answer; None after transport errors."""


def backoff_s(retry: int, base_s: float = 0.2, max_s: float = 5.0) -> float:
    """Exponential backoff with +-25 % jitter; `retry` is 0 for the first retry."""
    return min(max_s, base_s * 2**retry) * (0.75 + random.random() * 0.5)


def retry_after_s(headers: Any) -> float | None:
    """How long the server asked us to wait: `retry-after-ms` wins over `retry-after` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    try:
        if ms is not None and float(ms) >= 0:
            return float(ms) / 1000
    except ValueError:
        pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def detail_of(text: str) -> str:
    """The `detail` of an error body, else its first 500 characters."""
    try:
        detail = json.loads(text).get("detail")
    except (ValueError, AttributeError):
        return text[:500]
    return detail if isinstance(detail, str) else json.dumps(detail)


def auth_headers(env: AgentEnv) -> dict[str, str]:
    return {"authorization": f"Bearer {env.api_key}"} if env.api_key else {}


def request_json(
    env: AgentEnv, method: str, url: str, body: Any, what: str, retries: int = 8, timeout_s: float = 30
) -> tuple[int, str]:
    """Sends `body` as JSON (None: no body) and retries what may succeed later.

    The caller makes the request idempotent (an `event_id`, span ids), so a retry after a lost answer stores nothing twice.
    :returns: the status and body text of the first 2xx answer
    :raises EmitFailed: on a final 4xx, or when retries run out
    """
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", **auth_headers(env)} if data is not None else auth_headers(env)
    last: EmitFailed | None = None
    for retry in range(retries + 1):
        if retry > 0:
            time.sleep(backoff_s(retry - 1))
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            text = err.read().decode(errors="replace")
            last = EmitFailed(f"gateway answered {err.code} to {what}: {detail_of(text)}", err.code)
            if err.code == 429:
                time.sleep(min(60.0, retry_after_s(err.headers) or 0.0))
                continue
            if err.code < 500:
                raise last from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            last = EmitFailed(f"{what} failed: {reason}", None)
    raise last or EmitFailed(f"{what} failed", None)
