/**
 * @module The shared KV cache of the decode loop. All running rows live in one [B, H, N, C/H] tensor per layer so a
 * decode step is a handful of batched ops whatever B is. Rows of different lengths share columns: each row owns
 * some columns and an additive bias hides the others. Attention has no notion of column order (positions are in the
 * embeddings), so a row's keys may sit anywhere. Each step writes one column that every row owns, in place, into
 * free capacity (N = used columns + zeroed spare columns, grown {@link SPARE_COLUMNS} at a time), so a step copies
 * no cached keys; the bias hides the spare columns, whose softmax weight is exactly 0. A joining batch is aligned to
 * the right edge of the used columns by zero-padding on the left; leaving rows are dropped and columns no row owns
 * are trimmed.
 */
import * as tf from "@tensorflow/tfjs";
import type { LayerKv } from "./model.js";
import { MASKED } from "./ops.js";

/** Spare columns added when the cache runs out of free capacity (each growth copies the cache once). */
export const SPARE_COLUMNS = 16;

/** Column-padded, fixed-capacity KV cache of the running rows. Owns its tensors (and writes them in place). */
export class BatchKvCache {
  private layers: LayerKv[] = [];
  /** owned[b][col] = 1 when row b's key sits in that column (used columns only). */
  private owned: Uint8Array[] = [];
  /** Used columns; columns from here to the capacity are free and zero. */
  private columns = 0;

  /** Running rows (B). */
  get rows(): number {
    return this.owned.length;
  }

  /** Per-layer KV, [B, H, N, C/H] with N >= the used columns; valid until the next mutation. */
  get kv(): LayerKv[] {
    return this.layers;
  }

  /** Columns allocated (N): used plus free. */
  get capacity(): number {
    return this.layers[0]?.k.shape[2] ?? 0;
  }

  /**
   * Makes room for the next decode step's column (growing the capacity if none is free) and builds its bias: each
   * row sees its own columns plus the new one; other rows' columns and the free columns are hidden.
   * @returns the column the step writes (the first free one) and the bias [B, 1, 1, N] with 0 for visible and
   *   -1e9 for hidden columns (caller disposes)
   */
  reserveColumn(): { column: number; bias: tf.Tensor4D } {
    if (this.columns >= this.capacity) this.setCapacity(this.columns + SPARE_COLUMNS);
    const width = this.capacity;
    const bias = new Float32Array(this.rows * width).fill(MASKED);
    this.owned.forEach((row, b) => {
      const start = b * width;
      for (let col = 0; col < this.columns; col++) if (row[col] === 1) bias[start + col] = 0;
      bias[start + this.columns] = 0;
    });
    return { column: this.columns, bias: tf.tensor4d(bias, [this.rows, 1, 1, width]) };
  }

  /** Marks the reserved column used (every row owns it) once the decode step has written it. */
  commitColumn(): void {
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
    const padOld = Math.max(0, width - this.columns);
    const padNew = Math.max(0, this.columns - width);
    const total = this.columns + padOld;
    const capacity = total + SPARE_COLUMNS;
    const merged = tf.tidy(() =>
      prefill.map((layer, l) => {
        const old = this.layers[l];
        const join = (cached: tf.Tensor4D | undefined, added: tf.Tensor4D): tf.Tensor4D => {
          const fresh = padColumns(added, padNew, capacity - total);
          if (!cached || this.rows === 0) return fresh;
          const used = tf.slice(cached, [0, 0, 0, 0], [-1, -1, this.columns, -1]) as tf.Tensor4D;
          return tf.concat([padColumns(used, padOld, capacity - total), fresh], 0); // [B+B', H, N, C/H]
        };
        return { k: join(old?.k, layer.k), v: join(old?.v, layer.v) };
      }),
    );
    for (const layer of prefill) tf.dispose([layer.k, layer.v]);
    this.disposeLayers();
    this.layers = merged;
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
        k: trimColumns(tf.gather(layer.k, index, 0), start), // [B'', H, N - start, C/H]
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

  /** Grows every layer to `capacity` columns, the new ones zero. */
  private setCapacity(capacity: number): void {
    const extra = capacity - this.capacity;
    const next = tf.tidy(() =>
      this.layers.map((layer) => ({ k: padColumns(layer.k, 0, extra), v: padColumns(layer.v, 0, extra) })),
    );
    this.disposeLayers();
    this.layers = next;
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

/**
 * Zero-pads axis 2 with `left` columns before and `right` after. Always a new buffer (never `x` itself): the cache
 * writes its layers in place, so no layer may share a buffer with a tensor from elsewhere.
 */
function padColumns(x: tf.Tensor4D, left: number, right: number): tf.Tensor4D {
  return tf.pad(x, [
    [0, 0],
    [0, 0],
    [left, right],
    [0, 0],
  ]);
}

/** Drops the first `start` columns (axis 2). */
function trimColumns(x: tf.Tensor4D, start: number): tf.Tensor4D {
  if (start === 0) return x;
  const [b, h, l, d] = x.shape;
  return tf.slice(x, [0, 0, start, 0], [b, h, l - start, d]);
}
