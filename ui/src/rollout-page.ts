/**
 * @module The rollout page (trace viewer): one attempt's model calls in order, each call's prompt and response token
 * by token (response tokens shaded by logprob, value on hover), rewards where they attach, errors, policy versions and
 * latencies, the span tree when the agent sent spans, and the training rows the trainer would build from it with each
 * merge break outlined at its first differing token.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Event as StoredEvent } from "../../src/protocol/event.js";
import { getJson, postJson } from "./api.js";
import { TokenView, type ViewToken } from "./token-view.js";
import { buildTrace, idsWithoutText, type TraceCall, type TraceMismatch, type TraceModel } from "./trace-model.js";
import type { WireEvent, WireRollout } from "./wire.js";

/** A token's text as the viewer knows it (from any response that produced that id), else null. */
function textOf(model: TraceModel, id: number | undefined): string {
  if (id === undefined) return "(end)";
  const text = model.tokenText.get(id);
  return text === undefined ? `⟨${id}⟩` : JSON.stringify(text);
}

/** A call's tokens: prompt (with the merge-break token marked) then response. */
function callTokens(model: TraceModel, call: TraceCall, mismatch: TraceMismatch | undefined): ViewToken[] {
  const prompt: ViewToken[] = call.promptIds.map((id, i) => ({
    id,
    text: model.tokenText.get(id) ?? null,
    kind: "prompt",
    mark: mismatch !== undefined && i === mismatch.position,
  }));
  const response: ViewToken[] = call.responseIds.map((id, i) => ({
    id,
    text: model.tokenText.get(id) ?? null,
    kind: "response",
    logprob: call.logprobs[i] ?? null,
  }));
  return [...prompt, ...response];
}

/** Ids per detokenize request: the gateway's limit (they go in a POST body, not the URL). */
const DETOKENIZE_CHUNK = 4096;

/** Fills `model.tokenText` from the gateway's `/api/dashboard/detokenize`; resolves when done. */
async function fetchTokenTexts(model: TraceModel): Promise<void> {
  for (const [name, ids] of idsWithoutText(model)) {
    for (let at = 0; at < ids.length; at += DETOKENIZE_CHUNK) {
      const body = { model: name, ids: ids.slice(at, at + DETOKENIZE_CHUNK) };
      const { texts } = await postJson<{ texts: Record<string, string> }>("/api/dashboard/detokenize", body);
      for (const [id, text] of Object.entries(texts)) model.tokenText.set(Number(id), text);
    }
  }
}

/** One call's card. `textVersion` changes when more token texts arrived. */
function CallCard(props: { model: TraceModel; call: TraceCall; textVersion: number; onRendered: () => void }) {
  const { model, call } = props;
  const mismatch = model.mismatches.find((m) => m.callSequence === call.sequence);
  const tokens = useMemo(() => callTokens(model, call, mismatch), [model, call, props.textVersion]);
  const trained = call.turn === null ? "skipped by the trainer" : `turn ${call.turn}`;
  return html`<div class=${`call ${call.status === "error" ? "call-error" : ""}`} data-seq=${call.sequence}>
    <div class="call-head">
      <b>call #${call.sequence}</b> · ${trained} · <span class=${`state ${call.status === "error" ? "failed" : "succeeded"}`}>${call.status}${call.httpStatus ? ` ${call.httpStatus}` : ""}</span>
      · policy v${call.policyVersion ?? "?"} · ${call.latencyMs === null ? "" : `${Math.round(call.latencyMs)} ms`}
      ${call.finishReason ? ` · finish ${call.finishReason}` : ""}${call.agentName ? ` · agent ${call.agentName}` : ""}
      · ${call.promptIds.length} prompt + ${call.responseIds.length} response tokens
      ${call.captureIncomplete ? html` · <span class="warn">capture incomplete</span>` : null}
    </div>
    ${call.error !== undefined ? html`<pre class="error">${JSON.stringify(call.error, null, 2)}</pre>` : null}
    ${
      mismatch
        ? html`<div class="mismatch">merge break here: prompt token ${mismatch.position} is ${textOf(model, mismatch.got)}, the row had ${textOf(model, mismatch.expected)} (${mismatch.kind})</div>`
        : null
    }
    <${TokenView} tokens=${tokens} onRendered=${props.onRendered} />
  </div>`;
}

/** The training rows section. */
function RowsSection(props: { model: TraceModel; textVersion: number }) {
  const { model } = props;
  return html`<section class="rows">
    <h3>Training rows (trajectory level, as the trainer builds them)</h3>
    ${model.rows.map((row, k) => {
      const tokens: ViewToken[] = [
        ...row.promptTokenIds.map((id) => ({ id, text: model.tokenText.get(id) ?? null, kind: "prompt" as const })),
        ...row.responseTokenIds.map((id, i) => ({
          id,
          text: model.tokenText.get(id) ?? null,
          kind: row.lossMask[i] === 1 ? ("response" as const) : ("context" as const),
          logprob: row.oldLogprobs[i] ?? null,
        })),
      ];
      const trained = row.lossMask.reduce((a, b) => a + b, 0);
      return html`<div class="row" data-row=${k}>
        <div class="call-head"><b>row ${k}</b> · turns ${row.turns.join(", ")} · policy v${row.policyVersions.join(", v")}
          · ${row.promptTokenIds.length} prompt + ${row.responseTokenIds.length} response-region tokens (${trained} trained)</div>
        <${TokenView} tokens=${tokens} maxHeightPx=${200} />
      </div>`;
    })}
  </section>`;
}

/** The page. */
export function RolloutPage(props: { id: string }) {
  const [rollout, setRollout] = useState<WireRollout | null>(null);
  const [attempts, setAttempts] = useState<string[]>([]);
  const [attempt, setAttempt] = useState<string | null>(null);
  const [events, setEvents] = useState<WireEvent[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const rendered = useRef(0);
  const [textVersion, setTextVersion] = useState(0);
  const path = `/api/rollouts/${encodeURIComponent(props.id)}`;

  useEffect(() => {
    getJson<{ rollout: WireRollout; attempts: string[] }>(path)
      .then((body) => {
        setRollout(body.rollout);
        setAttempts(body.attempts);
        setAttempt(body.rollout.status.last_attempt_id ?? body.attempts.at(-1) ?? null);
      })
      .catch((err: Error) => setError(err.message));
  }, [props.id]);
  useEffect(() => {
    if (attempt === null) return;
    setEvents(null);
    rendered.current = 0;
    getJson<WireEvent[]>(`${path}/events?attempt_id=${encodeURIComponent(attempt)}`)
      .then((body) => {
        performance.mark("arclight:trace-data");
        setEvents(body);
      })
      .catch((err: Error) => setError(err.message));
  }, [attempt]);

  const input = rollout?.input as { data_id?: unknown } | null | undefined;
  const dataId = typeof input?.data_id === "string" ? input.data_id : "";
  const model = useMemo(
    () => (events ? buildTrace(props.id, dataId, events as unknown as StoredEvent[]) : null),
    [events],
  );
  useEffect(() => {
    if (!model) return;
    fetchTokenTexts(model)
      .then(() => setTextVersion((v) => v + 1))
      .catch(() => {}); // texts are a nicety: the strips already show ids
  }, [model]);
  const onCallRendered = () => {
    rendered.current += 1;
    if (model && rendered.current === model.calls.length) {
      performance.mark("arclight:trace-rendered");
      performance.measure("arclight:trace-render", "arclight:trace-data", "arclight:trace-rendered");
    }
  };

  if (error) return html`<section><p class="error">${error}</p></section>`;
  if (!rollout) return html`<section><p class="muted">loading…</p></section>`;
  const status = rollout.status;
  const callBySeq = new Map(model?.calls.map((c) => [c.sequence, c]));
  return html`<section>
    <h2>Rollout <code>${rollout.rollout_id}</code></h2>
    <div class="facts">
      <span class=${`state ${status.state}`}>${status.state}</span>
      <span>${rollout.is_train ? "train" : "val"}</span>
      <span>step ${String(rollout.metadata.batch_idx ?? "–")}</span>
      <span>data id ${dataId || "–"}</span>
      <span>reward <b id="final-reward">${model?.finalReward ?? "–"}</b></span>
      <label>attempt <select value=${attempt ?? ""} onChange=${(e: Event) => setAttempt((e.target as HTMLSelectElement).value)}>
        ${attempts.map((a) => html`<option value=${a}>${a}</option>`)}
      </select></label>
      <span class="muted">created ${new Date(status.created_at * 1000).toLocaleString()}, updated ${new Date(status.updated_at * 1000).toLocaleTimeString()}</span>
    </div>
    ${status.error_message ? html`<pre class="error">${status.error_message}</pre>` : null}
    ${
      model && model.mismatches.length > 0
        ? html`<div class="mismatch" id="mismatch-list">${model.mismatches.length} merge break(s):
            ${model.mismatches.map(
              (m) =>
                html`<div>turn ${m.turn} (call #${m.callSequence}) departs from row at token ${m.position}: ${textOf(model, m.got)} ≠ ${textOf(model, m.expected)}</div>`,
            )}</div>`
        : null
    }
    ${
      model && model.spans.length > 0
        ? html`<section class="spans"><h3>Spans</h3>
            ${model.spans.map(
              (s) => html`<div class="span" style=${{ paddingLeft: `${s.depth * 18}px` }}>
                ${s.name}${s.agentName ? ` [${s.agentName}]` : ""} · ${s.durationMs.toFixed(1)} ms
                ${s.status === "error" ? html` · <span class="warn">error</span>` : null}</div>`,
            )}</section>`
        : null
    }
    ${!model ? html`<p class="muted">loading events…</p>` : null}
    ${
      model
        ? html`<section class="calls"><h3>Calls, rewards and events (${model.calls.length} calls)</h3>
            ${(events ?? []).map((event) => {
              if (event.event_type === "model_request") {
                const call = callBySeq.get(event.sequence);
                return call
                  ? html`<${CallCard} model=${model} call=${call} textVersion=${textVersion} onRendered=${onCallRendered} />`
                  : null;
              }
              if (event.event_type === "reward") {
                const reward = model.rewards.find((r) => r.sequence === event.sequence);
                return html`<div class="reward">reward <b>${reward?.value}</b>${reward?.source ? ` from ${reward.source}` : ""}${reward?.reason ? ` · ${reward.reason}` : ""} (event #${event.sequence})</div>`;
              }
              if (event.event_type === "span") return null;
              return html`<div class="other">#${event.sequence} ${event.event_type} <code>${JSON.stringify(event.data).slice(0, 300)}</code></div>`;
            })}
          </section>
          <${RowsSection} model=${model} textVersion=${textVersion} />`
        : null
    }
  </section>`;
}
