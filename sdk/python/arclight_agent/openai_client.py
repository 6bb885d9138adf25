"""`openai_client()`: an `openai.OpenAI` client on this attempt's proxy URL and key (the `openai` package is optional)."""

from __future__ import annotations

from typing import Any

from .env import AgentEnv, from_env


def openai_client(*, env: AgentEnv | None = None, max_retries: int = 50, **kwargs: Any) -> Any:
    """An OpenAI client whose calls the gateway records for this attempt.

    `max_retries` is high because a paused gateway (weight update) answers 429 with `Retry-After`, which the client
    honours. Pass `extra_headers=traceparent()` on a call to file it under the running span.
    :raises NotInRollout: outside a rollout
    :raises ImportError: when the `openai` package is not installed
    """
    env = env or from_env()
    try:
        from openai import OpenAI
    except ImportError as err:
        raise ImportError("openai_client() needs the openai package: pip install openai") from err
    return OpenAI(base_url=env.base_url, api_key=env.api_key or "arclight-no-key", max_retries=max_retries, **kwargs)
