/**
 * @module Replacements for tfjs-wasm 4.22 data-movement kernels that copy more than needed (`Identity`, `Cast`,
 * `Slice`, `SplitV`, `GatherV2`, `Concat`).
 */
import * as tf from "@tensorflow/tfjs";

/** The parts of tfjs-backend-wasm's `BackendWasm` these kernels use. */
interface WasmBackendInternals {
  wasm: { HEAP32: Int32Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  incRef(dataId: object): void;
}

/** Replaces `name`'s wasm kernel with `replacement`, which may call the stock kernel. */
function override(
  name: string,
  replacement: (args: Parameters<tf.KernelFunc>[0], stock: tf.KernelFunc) => tf.TensorInfo | tf.TensorInfo[],
): void {
  const original = tf.getKernel(name, "wasm");
  if (!original) return;
  tf.unregisterKernel(name, "wasm");
  tf.registerKernel({ ...original, kernelFunc: (args) => replacement(args, original.kernelFunc) });
}

/** A tensor that shares `x`'s buffer (one more reference on it); `shape` may differ if the size does not. */
function share(args: Parameters<tf.KernelFunc>[0], x: tf.TensorInfo, dtype: tf.DataType): tf.TensorInfo {
  (args.backend as unknown as WasmBackendInternals).incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape, dtype };
}

/**
 * Identity shares the input's buffer (tfjs clones every tensor the tape saves). Safe: kernels never write inputs and
 * `assign` rebinds a variable's buffer.
 */
function shareIdentity(): void {
  override("Identity", (args, stock) => {
    const x = args.inputs.x as tf.TensorInfo;
    return x.dtype === "string" ? stock(args) : share(args, x, x.dtype);
  });
}

/** A cast to the input's own dtype (tfjs's gradients of mul/div/sub cast float32 to float32) shares the buffer. */
function shareSameDtypeCast(): void {
  override("Cast", (args, stock) => {
    const x = args.inputs.x as tf.TensorInfo;
    const { dtype } = args.attrs as { dtype: tf.DataType };
    return x.dtype === dtype && dtype !== "string" ? share(args, x, dtype) : stock(args);
  });
}

/** The box `begin`..`begin + size` of `x` (size -1: to the end) copied within the heap; the caller owns it. */
function heapSlice(
  backend: WasmBackendInternals,
  x: tf.TensorInfo,
  begin: number | number[],
  size: number | number[],
): tf.TensorInfo {
  const [start, extent] = tf.slice_util.parseSliceParams(x as tf.Tensor, begin, size) as [number[], number[]];
  const out = backend.makeOutput(extent, x.dtype);
  if (extent.some((d) => d === 0)) return out;
  // Read offsets and the heap after makeOutput: its malloc may grow (and so replace) the heap.
  const from = backend.dataIdMap.get(x.dataId).memoryOffset / 4;
  const to = backend.dataIdMap.get(out.dataId).memoryOffset / 4;
  copyStrided(backend.wasm.HEAP32, from, x.shape, start, extent, to);
  return out;
}

/** Slice and SplitV copy inside the heap for 4-byte dtypes (the stock kernels copy the whole input to JS first). */
function sliceInHeap(): void {
  const fits = (x: tf.TensorInfo): boolean => x.dtype === "float32" || x.dtype === "int32";
  override("Slice", (args, stock) => {
    const x = args.inputs.x as tf.TensorInfo;
    if (!fits(x)) return stock(args);
    const { begin, size } = args.attrs as { begin: number | number[]; size: number | number[] };
    return heapSlice(args.backend as unknown as WasmBackendInternals, x, begin, size);
  });
  override("SplitV", (args, stock) => {
    const x = args.inputs.x as tf.TensorInfo;
    if (!fits(x)) return stock(args);
    const { numOrSizeSplits, axis } = args.attrs as { numOrSizeSplits: number | number[]; axis: number };
    const along = tf.util.parseAxisParam(axis, x.shape)[0]!;
    const sizes = tf.backend_util.prepareSplitSize(x as tf.Tensor, numOrSizeSplits, along);
    const begin = x.shape.map(() => 0);
    const backend = args.backend as unknown as WasmBackendInternals;
    return sizes.map((s) => {
      const size = [...x.shape];
      size[along] = s;
      const part = heapSlice(backend, x, [...begin], size);
      begin[along]! += s;
      return part;
    });
  });
}

/** Copies a box of a row-major tensor in heap words, one `copyWithin` per contiguous run. */
export function copyStrided(
  heap: Int32Array,
  from: number,
  shape: number[],
  start: number[],
  extent: number[],
  to: number,
): void {
  const strides = [...tf.util.computeStrides(shape), 1];
  let axis = shape.length; // axes >= `axis` form one contiguous run
  while (axis > 0 && (axis === shape.length || (start[axis] === 0 && extent[axis] === shape[axis]))) axis--;
  const run = extent.slice(axis).reduce((n, d) => n * d, 1);
  const outer = extent.slice(0, axis);
  const index = new Array<number>(axis).fill(0); // odometer over the axes before `axis`
  const runs = outer.reduce((n, d) => n * d, 1);
  for (let r = 0; r < runs; r++) {
    let offset = from + (start[axis] ?? 0) * strides[axis]!;
    for (let d = 0; d < axis; d++) offset += (start[d]! + index[d]!) * strides[d]!;
    heap.copyWithin(to + r * run, offset, offset + run);
    for (let d = axis - 1; d >= 0; d--) {
      index[d]! += 1;
      if (index[d]! < outer[d]!) break;
      index[d] = 0;
    }
  }
}

/** GatherV2 without batch dims: one `copyWithin` per gathered slice, for 4-byte dtypes. */
function gatherInHeap(): void {
  override("GatherV2", (args, stock) => {
    const { x, indices } = args.inputs as { x: tf.TensorInfo; indices: tf.TensorInfo };
    const { axis, batchDims } = args.attrs as { axis: number; batchDims: number };
    if ((x.dtype !== "float32" && x.dtype !== "int32") || indices.dtype !== "int32" || batchDims !== 0)
      return stock(args);
    const along = tf.util.parseAxisParam(axis, x.shape)[0]!;
    const outer = x.shape.slice(0, along).reduce((n, d) => n * d, 1);
    const dim = x.shape[along]!;
    const slice = x.shape.slice(along + 1).reduce((n, d) => n * d, 1);
    const count = tf.util.sizeFromShape(indices.shape);
    const backend = args.backend as unknown as WasmBackendInternals;
    const out = backend.makeOutput(
      [...x.shape.slice(0, along), ...indices.shape, ...x.shape.slice(along + 1)],
      x.dtype,
    );
    const heap = backend.wasm.HEAP32; // after makeOutput, which may grow the heap
    const from = backend.dataIdMap.get(x.dataId).memoryOffset / 4;
    const to = backend.dataIdMap.get(out.dataId).memoryOffset / 4;
    const ids = heap.subarray(backend.dataIdMap.get(indices.dataId).memoryOffset / 4).subarray(0, count);
    for (const index of ids)
      if (index < 0 || index >= dim)
        throw new RangeError(`GatherV2: the index value ${index} is not in [0, ${dim - 1}]`);
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < count; i++) {
        const source = from + (o * dim + ids[i]!) * slice;
        heap.copyWithin(to + (o * count + i) * slice, source, source + slice);
      }
    return out;
  });
}

/** Concat: one `copyWithin` per input run inside the heap, for 4-byte dtypes. */
function concatInHeap(): void {
  override("Concat", (args, stock) => {
    const inputs = (args.inputs as unknown as tf.TensorInfo[]).filter((t) => tf.util.sizeFromShape(t.shape) > 0);
    const dtype = inputs[0]?.dtype;
    if (inputs.length < 2 || (dtype !== "float32" && dtype !== "int32") || inputs.some((t) => t.dtype !== dtype))
      return stock(args);
    const along = tf.util.parseAxisParam((args.attrs as { axis: number }).axis, inputs[0]!.shape)[0]!;
    const shapes = inputs.map((t) => t.shape);
    tf.backend_util.assertParamsConsistent(shapes, along);
    const backend = args.backend as unknown as WasmBackendInternals;
    const out = backend.makeOutput(tf.backend_util.computeOutShape(shapes, along), dtype);
    const heap = backend.wasm.HEAP32; // after makeOutput, which may grow the heap
    const outer = inputs[0]!.shape.slice(0, along).reduce((n, d) => n * d, 1);
    const runs = inputs.map((t) => tf.util.sizeFromShape(t.shape.slice(along)));
    const starts = inputs.map((t) => backend.dataIdMap.get(t.dataId).memoryOffset / 4);
    let to = backend.dataIdMap.get(out.dataId).memoryOffset / 4;
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < inputs.length; i++) {
        const from = starts[i]! + o * runs[i]!;
        heap.copyWithin(to, from, from + runs[i]!);
        to += runs[i]!;
      }
    return out;
  });
}

/** Installs the replacements. Call before selecting the backend. */
export function installLeanKernels(): void {
  shareIdentity();
  shareSameDtypeCast();
  sliceInHeap();
  gatherInHeap();
  concatInHeap();
}
