/**
 * @module An in-place KV-cache write for tfjs's wasm backend: copies one decode step's keys (or values) into a free
 * column of the fixed-capacity cache buffer, so a decode step no longer copies the whole cache to append a column
 * (`Concat` moved every cached key and value of every layer each step). The kernel writes into its input's buffer,
 * which tfjs kernels otherwise never do: only {@link BatchKvCache} may call it, on buffers it owns alone.
 */
import * as tf from "@tensorflow/tfjs";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  wasm: { HEAP32: Int32Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  incRef(dataId: object): void;
}

/** Name of the kernel registered by {@link installKvWriteKernel}. */
export const KV_WRITE_KERNEL = "ArclightKvWrite";

/** Registers {@link KV_WRITE_KERNEL} on the wasm backend; idempotent. Call before selecting the backend. */
export function installKvWriteKernel(): void {
  if (tf.getKernel(KV_WRITE_KERNEL, "wasm")) return;
  tf.registerKernel({
    kernelName: KV_WRITE_KERNEL,
    backendName: "wasm",
    kernelFunc: (args) => {
      const { cache, update } = args.inputs as { cache: tf.TensorInfo; update: tf.TensorInfo };
      const { column } = args.attrs as { column: number };
      const [rows, heads, capacity, headDim] = cache.shape as [number, number, number, number];
      if (column < 0 || column >= capacity) throw new RangeError(`KV write: column ${column} outside [0, ${capacity})`);
      if (tf.util.sizeFromShape(update.shape) !== rows * heads * headDim)
        throw new RangeError(`KV write: update of shape [${update.shape}] does not fit cache [${cache.shape}]`);
      const backend = args.backend as unknown as WasmBackendInternals;
      const heap = backend.wasm.HEAP32;
      const to = backend.dataIdMap.get(cache.dataId).memoryOffset / 4 + column * headDim;
      const from = backend.dataIdMap.get(update.dataId).memoryOffset / 4;
      for (let entry = 0; entry < rows * heads; entry++) {
        const source = from + entry * headDim;
        heap.copyWithin(to + entry * capacity * headDim, source, source + headDim);
      }
      backend.incRef(cache.dataId); // the output shares (and names) the updated cache buffer
      return { dataId: cache.dataId, shape: cache.shape, dtype: cache.dtype };
    },
  });
}

/**
 * Writes `update` into column `column` of `cache` in place (call {@link installKvWriteKernel} first, as
 * `initWasmBackend` does).
 * @param cache - float32 [B, H, capacity, C/H], owned by the KV cache and shared with nothing else
 * @param update - float32 [B, H, 1, C/H] (any shape of that size, row-major b, h, d)
 * @param column - the column to write, 0 <= column < capacity
 * @returns a tensor naming the updated `cache` buffer, [B, H, capacity, C/H] (dispose it as usual)
 * @throws {RangeError} when the column or the update's size does not fit
 */
export function writeKvColumn(cache: tf.Tensor4D, update: tf.Tensor, column: number): tf.Tensor4D {
  const attrs = { column } as unknown as tf.NamedAttrMap;
  return tf.engine().runKernel(KV_WRITE_KERNEL, { cache, update }, attrs) as tf.Tensor4D;
}
