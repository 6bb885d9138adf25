"""Where an agent inside a rollout finds the gateway: the `AGL_*` variables the controller sets. The one SDK module
that reads `os.environ`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

REQUIRED = ("AGL_OPENAI_BASE_URL", "AGL_EVENT_URL", "AGL_ROLLOUT_ID", "AGL_ATTEMPT_ID")


class NotInRollout(RuntimeError):
    """The code runs outside a rollout: the controller's `AGL_*` variables are missing."""

    def __init__(self, missing: list[str]):
        verb = "is" if len(missing) == 1 else "are"
        super().__init__(
            f"not running inside an arclight rollout: {', '.join(missing)} {verb} not set "
            "(the arclight controller sets AGL_OPENAI_BASE_URL, AGL_EVENT_URL, AGL_KEY, AGL_ROLLOUT_ID and AGL_ATTEMPT_ID)"
        )
        self.missing = missing


@dataclass(frozen=True)
class AgentEnv:
    """The rollout context of an agent process."""

    base_url: str
    """OpenAI base URL of the gateway proxy for this attempt (`AGL_OPENAI_BASE_URL`)."""
    api_key: str
    """Key presented to the gateway, as the OpenAI API key and on event posts (`AGL_KEY`; may be empty)."""
    rollout_id: str
    attempt_id: str
    event_url: str
    """Where this attempt's events are posted (`AGL_EVENT_URL`)."""
    traces_url: str | None = None
    """`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else derived from `event_url` (see `traces_url_of`)."""
    service_name: str | None = None
    """`OTEL_SERVICE_NAME`; the tracer uses `arclight-agent` when absent."""


def from_env(environ: Mapping[str, str] | None = None) -> AgentEnv:
    """Reads the rollout context.

    :param environ: the variables to read; default `os.environ`
    :raises NotInRollout: naming every missing variable (`AGL_KEY` may be absent: an open gateway needs none)
    """
    env = os.environ if environ is None else environ
    missing = [name for name in REQUIRED if not env.get(name)]
    if missing:
        raise NotInRollout(missing)
    return AgentEnv(
        base_url=env["AGL_OPENAI_BASE_URL"],
        api_key=env.get("AGL_KEY", ""),
        rollout_id=env["AGL_ROLLOUT_ID"],
        attempt_id=env["AGL_ATTEMPT_ID"],
        event_url=env["AGL_EVENT_URL"],
        traces_url=env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or None,
        service_name=env.get("OTEL_SERVICE_NAME") or None,
    )


def gateway_url_of(env: AgentEnv) -> str:
    """The gateway's base URL: `AGL_EVENT_URL` up to its `/api/rollouts/...` path."""
    at = env.event_url.rfind("/api/rollouts/")
    if at >= 0:
        return env.event_url[:at]
    scheme, _, rest = env.event_url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def traces_url_of(env: AgentEnv) -> str:
    """Where this attempt's spans go: `env.traces_url`, else `<gateway>/v1/traces`."""
    return env.traces_url or f"{gateway_url_of(env)}/v1/traces"
