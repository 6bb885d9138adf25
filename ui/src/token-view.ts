/**
 * @module A virtualised token strip: tokens laid out in fixed-height monospace lines (wrapped at the panel's width,
 * broken at newlines), only the lines in view rendered, so a 32k-token trace scrolls without freezing. Response tokens
 * are shaded by their logprob (red = unlikely, green = likely) and show id, logprob and mask on hover.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";

/** One token to show. `kind`: prompt (grey), response (shaded by logprob, mask 1), context (mask 0 inside a row). */
export interface ViewToken {
  id: number;
  text: string | null;
  kind: "prompt" | "response" | "context";
  logprob?: number | null;
  /** Outlined in red: the first token where a merge broke. */
  mark?: boolean;
}

/** Line height and font of the strip, in CSS px (kept in sync with `.tokview` in style.css). */
const LINE_PX = 20;
const FONT = "13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
/** Lines rendered above and below the visible ones. */
const OVERSCAN = 8;

let charWidthPx: number | undefined;
/** Width of one monospace character, measured once. */
function charWidth(): number {
  if (charWidthPx === undefined) {
    const ctx = document.createElement("canvas").getContext("2d");
    if (ctx) ctx.font = FONT;
    charWidthPx = ctx ? ctx.measureText("MMMMMMMMMM").width / 10 : 8;
  }
  return charWidthPx;
}

/** What a token shows: newlines as ↵ and tabs as →, an unknown text as ⟨id⟩. */
function shown(token: ViewToken): string {
  const text = token.text ?? `⟨${token.id}⟩`;
  return text.replace(/\n/g, "↵").replace(/\t/g, "→") || "∅";
}

/**
 * Splits tokens into lines of at most `cols` characters, breaking after a token that holds a newline.
 * @returns the index of each line's first token, [lines + 1] (the last entry is `tokens.length`)
 */
export function layoutLines(texts: readonly string[], breaks: readonly boolean[], cols: number): Int32Array {
  const starts: number[] = [0];
  let used = 0;
  for (let i = 0; i < texts.length; i += 1) {
    const width = (texts[i] as string).length;
    if (used > 0 && used + width > cols) {
      starts.push(i);
      used = 0;
    }
    used += width;
    if (breaks[i] && i + 1 < texts.length) {
      starts.push(i + 1);
      used = 0;
    }
  }
  starts.push(texts.length);
  return Int32Array.from(starts);
}

/** Background of a token: grey prompt, none for context, logprob hue for response. */
function background(token: ViewToken): string {
  if (token.mark) return "#fecaca";
  if (token.kind === "prompt") return "#eceff3";
  if (token.kind === "context") return "transparent";
  if (token.logprob === null || token.logprob === undefined) return "#dde3ea";
  const p = Math.exp(token.logprob);
  return `hsl(${Math.round(120 * p)} 75% ${Math.round(82 + 8 * p)}%)`;
}

/** Tooltip text of a token. */
function describe(token: ViewToken): string {
  const parts = [`id ${token.id}`, token.kind === "prompt" ? "prompt" : `mask ${token.kind === "response" ? 1 : 0}`];
  if (token.logprob !== null && token.logprob !== undefined) {
    parts.unshift(`logprob ${token.logprob.toFixed(4)} (p ${Math.exp(token.logprob).toFixed(3)})`);
  }
  if (token.mark) parts.push("merge break");
  return parts.join(" · ");
}

/**
 * The token strip.
 * @param props.tokens - tokens in order
 * @param props.maxHeightPx - the strip scrolls beyond this height; default 420
 * @param props.onRendered - called once after the first paint with content (the trace timing uses it)
 */
export function TokenView(props: { tokens: ViewToken[]; maxHeightPx?: number; onRendered?: () => void }) {
  const { tokens, maxHeightPx = 420 } = props;
  const box = useRef<HTMLDivElement>(null);
  const [widthPx, setWidthPx] = useState(0);
  const [scrollTop, setScrollTop] = useState(0);
  const [hover, setHover] = useState<{ i: number; x: number; y: number } | null>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setWidthPx(el.clientWidth));
    observer.observe(el);
    setWidthPx(el.clientWidth);
    return () => observer.disconnect();
  }, []);
  const texts = useMemo(() => tokens.map(shown), [tokens]);
  const breaks = useMemo(() => tokens.map((t) => (t.text ?? "").includes("\n")), [tokens]);
  const cols = Math.max(20, Math.floor((widthPx - 16) / charWidth()));
  const starts = useMemo(() => layoutLines(texts, breaks, cols), [texts, breaks, cols]);
  const lineCount = starts.length - 1;
  const heightPx = Math.min(maxHeightPx, Math.max(1, lineCount) * LINE_PX + 4);
  const first = Math.max(0, Math.floor(scrollTop / LINE_PX) - OVERSCAN);
  const last = Math.min(lineCount, Math.ceil((scrollTop + heightPx) / LINE_PX) + OVERSCAN);
  useEffect(() => {
    if (widthPx > 0 && props.onRendered) requestAnimationFrame(() => props.onRendered?.());
  }, [widthPx > 0]);
  const lines = [];
  for (let line = first; line < last; line += 1) {
    const spans = [];
    for (let i = starts[line] as number; i < (starts[line + 1] as number); i += 1) {
      const token = tokens[i] as ViewToken;
      spans.push(
        html`<span class=${`tok ${token.kind}${token.mark ? " mark" : ""}`} data-i=${i} style=${{
          background: background(token),
        }}>${texts[i]}</span>`,
      );
    }
    lines.push(html`<div class="tokline" style=${{ top: `${line * LINE_PX}px` }}>${spans}</div>`);
  }
  const onMove = (event: MouseEvent) => {
    const target = (event.target as HTMLElement).closest("[data-i]") as HTMLElement | null;
    setHover(target ? { i: Number(target.dataset.i), x: event.clientX, y: event.clientY } : null);
  };
  const hovered = hover ? tokens[hover.i] : undefined;
  return html`<div
      class="tokview"
      ref=${box}
      style=${{ height: `${heightPx}px` }}
      onScroll=${(e: Event) => setScrollTop((e.currentTarget as HTMLElement).scrollTop)}
      onMouseMove=${onMove}
      onMouseLeave=${() => setHover(null)}
    >
      <div style=${{ height: `${lineCount * LINE_PX}px`, position: "relative" }}>${lines}</div>
    </div>
    ${
      hovered && hover
        ? html`<div class="tok-tip" style=${{ left: `${hover.x + 12}px`, top: `${hover.y + 14}px` }}>
            ${describe(hovered)}
          </div>`
        : null
    }`;
}
