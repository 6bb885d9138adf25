/**
 * @module The rollouts page: a filtered, paged table served by `/api/dashboard/rollouts` (the gateway filters and
 * pages, so 100k rollouts cost one page per view). Filters live in the URL (`#/rollouts?state=failed&run=r1`), and
 * the page re-reads when the feed says rollouts changed.
 */
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson, openStream } from "./api.js";
import type { RolloutPage } from "./wire.js";

/** Filter fields, as query keys of `/api/dashboard/rollouts`. */
const FILTERS: readonly { key: string; label: string; width?: string }[] = [
  { key: "run", label: "run" },
  { key: "step", label: "step", width: "5em" },
  { key: "data_id", label: "data id" },
  { key: "reward_min", label: "reward ≥", width: "5em" },
  { key: "reward_max", label: "reward ≤", width: "5em" },
  { key: "agent", label: "agent" },
  { key: "id", label: "id contains" },
];
const PAGE_SIZE = 50;

function fmtTime(epochS: number): string {
  return new Date(epochS * 1000).toLocaleTimeString();
}

/** The page. `query` is the part of the hash after `?`. */
export function RolloutsPage(props: { query: string }) {
  const params = new URLSearchParams(props.query);
  const [page, setPage] = useState<RolloutPage | null>(null);
  const [error, setError] = useState<string | null>(null);
  const firstPaint = useRef(false);
  const offset = Number(params.get("offset") ?? 0);

  const load = () => {
    const query = new URLSearchParams(props.query);
    query.set("limit", String(PAGE_SIZE));
    return getJson<RolloutPage>(`/api/dashboard/rollouts?${query}`)
      .then((body) => {
        setPage(body);
        setError(null);
      })
      .catch((err: Error) => setError(err.message));
  };
  useEffect(() => {
    void load();
  }, [props.query]);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const close = openStream({
      rollouts: () => {
        clearTimeout(timer);
        timer = setTimeout(() => void load(), 500);
      },
    });
    return () => {
      clearTimeout(timer);
      close();
    };
  }, [props.query]);
  useEffect(() => {
    if (page && !firstPaint.current) {
      firstPaint.current = true;
      requestAnimationFrame(() => performance.mark("arclight:rollouts-rendered"));
    }
  }, [page]);

  const go = (next: URLSearchParams) => {
    for (const [key, value] of [...next.entries()]) if (value === "") next.delete(key);
    location.hash = `#/rollouts?${next}`;
  };
  const onSubmit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const next = new URLSearchParams();
    for (const [key, value] of form.entries()) if (typeof value === "string" && value !== "") next.append(key, value);
    go(next);
  };
  const pageTo = (newOffset: number) => {
    const next = new URLSearchParams(props.query);
    next.set("offset", String(Math.max(0, newOffset)));
    go(next);
  };

  return html`<section>
    <h2>Rollouts</h2>
    <form class="filters" onSubmit=${onSubmit}>
      <label>state <select name="state" value=${params.get("state") ?? ""}>
        <option value="">any</option>
        ${["queuing", "running", "succeeded", "failed"].map((s) => html`<option value=${s}>${s}</option>`)}
      </select></label>
      <label>split <select name="is_train" value=${params.get("is_train") ?? ""}>
        <option value="">any</option><option value="true">train</option><option value="false">val</option>
      </select></label>
      ${FILTERS.map(
        (f) =>
          html`<label>${f.label} <input name=${f.key} value=${params.get(f.key) ?? ""} style=${{ width: f.width ?? "9em" }} /></label>`,
      )}
      <button type="submit">Filter</button>
      <a href="#/rollouts">clear</a>
    </form>
    ${error ? html`<p class="error">${error}</p>` : null}
    ${
      page
        ? html`<div class="pager">
              <button disabled=${offset === 0} onClick=${() => pageTo(offset - PAGE_SIZE)}>‹ prev</button>
              <span id="rollout-count">${page.total === 0 ? "no rollouts" : `${offset + 1}–${offset + page.items.length} of ${page.total.toLocaleString("en")}`}</span>
              <button disabled=${offset + PAGE_SIZE >= page.total} onClick=${() => pageTo(offset + PAGE_SIZE)}>next ›</button>
            </div>
            <table class="rollouts">
              <thead><tr><th>rollout</th><th>state</th><th>split</th><th>step</th><th>data id</th><th>agent</th><th>reward</th><th>attempt</th><th>updated</th></tr></thead>
              <tbody>
                ${page.items.map(
                  (r) => html`<tr data-id=${r.rollout_id}>
                    <td><a href=${`#/rollout/${encodeURIComponent(r.rollout_id)}`}>${r.rollout_id}</a></td>
                    <td><span class=${`state ${r.state}`}>${r.state}</span></td>
                    <td>${r.is_train ? "train" : "val"}</td>
                    <td>${r.step ?? ""}</td>
                    <td>${r.data_id}</td>
                    <td>${r.agent}</td>
                    <td class="num">${r.reward === null ? "" : r.reward.toFixed(3)}</td>
                    <td>${r.attempt_id ?? ""}</td>
                    <td title=${r.error_message ?? ""}>${fmtTime(r.updated_at)}${r.error_message ? " ⚠" : ""}</td>
                  </tr>`,
                )}
              </tbody>
            </table>`
        : html`<p class="muted">loading…</p>`
    }
  </section>`;
}
