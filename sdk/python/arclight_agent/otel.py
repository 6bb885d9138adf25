"""`setup_opentelemetry()`: the Python OpenTelemetry SDK, set up to export this attempt's spans to the gateway, for
agents that want OTel's API and instrumentations rather than the built-in tracer. The SDK is optional and imported only
here."""

from __future__ import annotations

from typing import Any

from .env import AgentEnv, from_env, traces_url_of

PACKAGES = "opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"


def setup_opentelemetry(
    *, env: AgentEnv | None = None, service_name: str | None = None, set_global: bool = True
) -> Any:
    """Builds a `TracerProvider` whose batch processor exports OTLP/HTTP protobuf to the gateway's `/v1/traces` with
    the gateway key, its resource tagged `arclight.rollout_id` / `arclight.attempt_id`. Does what the `OTEL_*`
    variables the controller sets do, from the `AGL_*` ones, so it also works where those are off.

    :param env: rollout context; default `from_env()`
    :param service_name: `service.name`; default `OTEL_SERVICE_NAME`, else `arclight-agent`
    :param set_global: also make it the global provider (`trace.get_tracer(...)` then exports here)
    :returns: the provider; call its `shutdown()` (or `force_flush()`) before the agent exits
    :raises NotInRollout: outside a rollout
    :raises ImportError: when the OpenTelemetry packages are not installed (the message names them)
    """
    env = env or from_env()
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as err:
        raise ImportError(f"setup_opentelemetry() needs the OpenTelemetry SDK: pip install {PACKAGES}") from err
    resource = Resource.create(
        {
            "service.name": service_name or env.service_name or "arclight-agent",
            "arclight.rollout_id": env.rollout_id,
            "arclight.attempt_id": env.attempt_id,
        }
    )
    headers = {"authorization": f"Bearer {env.api_key}"} if env.api_key else {}
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url_of(env), headers=headers)))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider
