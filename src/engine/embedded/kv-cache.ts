/**
 * @module The shared KV cache of the decode loop. All running rows live in one [B, H, L, C/H] tensor per layer so a
 * decode step is a handful of batched ops whatever B is. Rows of different lengths share columns: each row owns
 * some columns and an additive bias hides the others. Attention has no notion of column order (positions are in the
 * embeddings), so a row's keys may sit anywhere. Each step appends one column that every row owns; a joining batch is
 * aligned to the right edge by zero-padding on the left; leaving rows are dropped and columns no row owns are trimmed.
 */
import * as tf from "@tensorflow/tfjs";
import type { LayerKv } from "./model.js";
import { MASKED } from "./ops.js";

/** Column-padded KV cache of the running rows. Owns its tensors. */
export class BatchKvCache {
  private layers: LayerKv[] = [];
  /** owned[b][col] = 1 when row b's key sits in that column. */
  private owned: Uint8Array[] = [];
  private columns = 0;

  /** Running rows (B). */
  get rows(): number {
    return this.owned.length;
  }

  /** Per-layer KV, [B, H, L, C/H]; valid until the next mutation. */
  get kv(): LayerKv[] {
    return this.layers;
  }

  /**
   * Attention bias of the next decode step: each row sees its own columns plus the new one.
   * @returns [B, 1, 1, L+1] with 0 for visible and -1e9 for hidden columns (caller disposes)
   */
  stepBias(): tf.Tensor4D {
    const width = this.columns + 1;
    const bias = new Float32Array(this.rows * width);
    this.owned.forEach((row, b) => {
      for (let col = 0; col < this.columns; col++) if (row[col] === 0) bias[b * width + col] = MASKED;
    });
    return tf.tensor4d(bias, [this.rows, 1, 1, width]);
  }

  /**
   * Replaces the KV after a decode step appended one column owned by every row.
   * @param next - per-layer KV, [B, H, L+1, C/H]; the cache takes ownership
   */
  appendStep(next: LayerKv[]): void {
    this.disposeLayers();
    this.layers = next;
    this.columns += 1;
    this.owned = this.owned.map((row) => grow(row, 0, 1, 1));
  }

  /**
   * Adds prefilled rows, right-aligned with the running ones.
   * @param prefill - per-layer KV of the new rows, [B', H, P, C/H] (right-padded prompts); the cache takes ownership
   * @param lengths - prompt length of each new row (tokens); row b owns its first lengths[b] columns
   */
  addRows(prefill: LayerKv[], lengths: number[]): void {
    const width = prefill[0]!.k.shape[2];
    if (this.rows === 0) {
      this.disposeLayers();
      this.layers = prefill;
      this.columns = width;
      this.owned = lengths.map((n) => ownedPrefix(width, n));
      return;
    }
    const padOld = Math.max(0, width - this.columns);
    const padNew = Math.max(0, this.columns - width);
    const merged = tf.tidy(() =>
      this.layers.map((layer, l) => ({
        k: tf.concat([padLeft(layer.k, padOld), padLeft(prefill[l]!.k, padNew)], 0), // [B+B', H, L', C/H]
        v: tf.concat([padLeft(layer.v, padOld), padLeft(prefill[l]!.v, padNew)], 0),
      })),
    );
    for (const layer of prefill) tf.dispose([layer.k, layer.v]);
    this.disposeLayers();
    this.layers = merged;
    const total = this.columns + padOld;
    this.owned = [
      ...this.owned.map((row) => grow(row, padOld, 0, 0)),
      ...lengths.map((n) => grow(ownedPrefix(width, n), padNew, 0, 0)),
    ];
    this.columns = total;
  }

  /**
   * Keeps only the given rows (in that order) and trims leading columns no remaining row owns.
   * @param keep - indices of the rows to keep
   */
  keepRows(keep: number[]): void {
    if (keep.length === this.rows) return;
    if (keep.length === 0) {
      this.clear();
      return;
    }
    const owned = keep.map((b) => this.owned[b]!);
    let start = 0;
    while (start < this.columns && owned.every((row) => row[start] === 0)) start++;
    const next = tf.tidy(() => {
      const index = tf.tensor1d(keep, "int32");
      return this.layers.map((layer) => ({
        k: trimColumns(tf.gather(layer.k, index, 0), start), // [B'', H, L - start, C/H]
        v: trimColumns(tf.gather(layer.v, index, 0), start),
      }));
    });
    this.disposeLayers();
    this.layers = next;
    this.owned = owned.map((row) => row.slice(start));
    this.columns -= start;
  }

  /** Drops every row and frees the tensors. */
  clear(): void {
    this.disposeLayers();
    this.layers = [];
    this.owned = [];
    this.columns = 0;
  }

  private disposeLayers(): void {
    for (const layer of this.layers) tf.dispose([layer.k, layer.v]);
  }
}

/** A row owning its first `length` of `width` columns. */
function ownedPrefix(width: number, length: number): Uint8Array {
  const row = new Uint8Array(width);
  row.fill(1, 0, length);
  return row;
}

/** `row` with `left` unowned columns before it and `right` columns after it set to `fill`. */
function grow(row: Uint8Array, left: number, right: number, fill: number): Uint8Array {
  const out = new Uint8Array(left + row.length + right);
  out.set(row, left);
  out.fill(fill, left + row.length);
  return out;
}

/** Zero-pads axis 2 on the left; returns the input itself when `pad` is 0. */
function padLeft(x: tf.Tensor4D, pad: number): tf.Tensor4D {
  return pad === 0
    ? x
    : tf.pad(x, [
        [0, 0],
        [0, 0],
        [pad, 0],
        [0, 0],
      ]);
}

/** Drops the first `start` columns (axis 2). */
function trimColumns(x: tf.Tensor4D, start: number): tf.Tensor4D {
  if (start === 0) return x;
  const [b, h, l, d] = x.shape;
  return tf.slice(x, [0, 0, start, 0], [b, h, l - start, d]);
}
