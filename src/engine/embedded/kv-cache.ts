/**
 * @module The decode loop's shared KV cache: one [B, H, capacity, C/H] tensor per layer. Rows share columns, each
 * hidden from the others by an additive bias (positions live in the embeddings, so column order is free). Each step
 * writes one column in place; joins, leaves and growth copy, so no other tensor may share these buffers.
 */
import * as tf from "@tensorflow/tfjs";
import type { LayerKv } from "./model.js";
import { MASKED } from "./ops.js";

/** Free columns kept after the filled ones when the cache is rebuilt: as many as filled, at least this many. */
const MIN_ROOM = 16;

/** Column-padded KV cache of the running rows. Owns its tensors. */
export class BatchKvCache {
  /** Per layer, [B, H, capacity, C/H]; columns 0..columns-1 are filled. */
  private layers: LayerKv[] = [];
  /** owned[b][col] = 1 when row b's key sits in that column. */
  private owned: Uint8Array[] = [];
  private columns = 0;

  /** Running rows (B). */
  get rows(): number {
    return this.owned.length;
  }

  /** Filled columns (L): the next decode step writes column L. */
  get filled(): number {
    return this.columns;
  }

  /** Per-layer KV with columns 0..L-1 filled; a decode step writes column L in place, then {@link advance}s. */
  get kv(): LayerKv[] {
    return this.layers;
  }

  /** Makes sure column L is free for the next decode step (rebuilding the tensors with more room if not). */
  reserveColumn(): void {
    const capacity = this.layers[0]?.k.shape[2] ?? 0;
    if (this.rows === 0 || this.columns < capacity) return;
    this.replaceLayers(tf.tidy(() => this.layers.map((layer) => withRoom(layer, this.columns))));
  }

  /** Next step's attention bias, [B × (L+1)]: 0 visible, -1e9 hidden. */
  stepBias(): Float32Array {
    const width = this.columns + 1;
    const bias = new Float32Array(this.rows * width);
    this.owned.forEach((row, b) => {
      for (let col = 0; col < this.columns; col++) if (row[col] === 0) bias[b * width + col] = MASKED;
    });
    return bias;
  }

  /** Records that a decode step filled column L (every row owns it). */
  advance(): void {
    this.columns += 1;
    this.owned = this.owned.map((row) => grow(row, 0, 1, 1));
  }

  /** Adds prefilled rows (taking ownership), right-aligned; row b owns its first lengths[b] columns. */
  addRows(prefill: LayerKv[], lengths: number[]): void {
    const width = prefill[0]!.k.shape[2];
    if (this.rows === 0) {
      const next = tf.tidy(() => prefill.map((layer) => withRoom(layer, width)));
      for (const layer of prefill) tf.dispose([layer.k, layer.v]);
      this.replaceLayers(next);
      this.columns = width;
      this.owned = lengths.map((n) => ownedPrefix(width, n));
      return;
    }
    const padOld = Math.max(0, width - this.columns);
    const padNew = Math.max(0, this.columns - width);
    const total = this.columns + padOld;
    const merged = tf.tidy(() =>
      this.layers.map((layer, l) =>
        withRoom(
          {
            k: tf.concat([padLeft(filled(layer.k, this.columns), padOld), padLeft(prefill[l]!.k, padNew)], 0), // [B+B', H, L', C/H]
            v: tf.concat([padLeft(filled(layer.v, this.columns), padOld), padLeft(prefill[l]!.v, padNew)], 0),
          },
          total,
        ),
      ),
    );
    for (const layer of prefill) tf.dispose([layer.k, layer.v]);
    this.replaceLayers(merged);
    this.owned = [
      ...this.owned.map((row) => grow(row, padOld, 0, 0)),
      ...lengths.map((n) => grow(ownedPrefix(width, n), padNew, 0, 0)),
    ];
    this.columns = total;
  }

  /** Keeps the given rows in that order and trims leading columns no row owns. */
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
      const kept = (x: tf.Tensor4D): tf.Tensor4D => columnRange(tf.gather(x, index, 0), start, this.columns);
      return this.layers.map((layer) => withRoom({ k: kept(layer.k), v: kept(layer.v) }, this.columns - start)); // [B'', H, ·, C/H]
    });
    this.replaceLayers(next);
    this.owned = owned.map((row) => row.slice(start));
    this.columns -= start;
  }

  /** Drops every row and frees the tensors. */
  clear(): void {
    this.replaceLayers([]);
    this.owned = [];
    this.columns = 0;
  }

  private replaceLayers(next: LayerKv[]): void {
    for (const layer of this.layers) tf.dispose([layer.k, layer.v]);
    this.layers = next;
  }
}

/** The filled columns copied to a fresh buffer with zeroed room after them (the decode step writes into it). */
function withRoom(layer: LayerKv, columns: number): LayerKv {
  const room = Math.max(MIN_ROOM, columns);
  const padded = (x: tf.Tensor4D): tf.Tensor4D =>
    tf.pad(filled(x, columns), [
      [0, 0],
      [0, 0],
      [0, room],
      [0, 0],
    ]);
  return { k: padded(layer.k), v: padded(layer.v) };
}

/** Columns 0..columns-1 of x (axis 2); x itself when those are all of it. */
function filled(x: tf.Tensor4D, columns: number): tf.Tensor4D {
  return columnRange(x, 0, columns);
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

/** Columns start..end-1 of x (axis 2); x itself when those are all of it. */
function columnRange(x: tf.Tensor4D, start: number, end: number): tf.Tensor4D {
  const [b, h, l, d] = x.shape;
  return start === 0 && end === l ? x : tf.slice(x, [0, 0, start, 0], [b, h, end - start, d]);
}
