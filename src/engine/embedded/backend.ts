/**
 * @module Starts tfjs on its wasm backend and refuses to run on anything else: tfjs silently falls back to its pure-JS
 * `cpu` backend (10–25× slower) when wasm fails to load, which would pass every test and miss every speed target.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import { installBatchedXnnMatMul } from "./wasm-matmul.js";

/** The backend is not wasm after initialisation. */
export class WasmBackendUnavailable extends Error {
  constructor(actual: string) {
    super(
      `tfjs backend is "${actual}", expected "wasm": the embedded engine only runs on @tensorflow/tfjs-backend-wasm`,
    );
    this.name = "WasmBackendUnavailable";
  }
}

let ready: Promise<void> | undefined;

/**
 * Replaces wasm's `Identity` kernel, which copies its input into a fresh heap buffer, with one that shares the input's
 * buffer and bumps its reference count, as wasm's own `Reshape` already does. tfjs runs `Identity` for every tensor
 * the gradient tape saves (`Engine.clone`), so the copying kernel cost ~17% of a B32×T128 train step. Sharing is
 * safe: kernels never write their inputs and a variable's `assign` rebinds its buffer instead of overwriting it.
 */
function shareIdentityBuffers(): void {
  const original = tf.getKernel("Identity", "wasm");
  if (!original) return;
  tf.unregisterKernel("Identity", "wasm");
  tf.registerKernel({
    ...original,
    kernelFunc: (args) => {
      const x = args.inputs.x as tf.TensorInfo;
      if (x.dtype === "string") return original.kernelFunc(args);
      (args.backend as { incRef(dataId: object): void }).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
}

/**
 * Selects the wasm backend once per process and asserts it is active. Safe to call many times; later calls share
 * the first one's promise.
 * @returns resolves when tfjs is ready on wasm
 * @throws {WasmBackendUnavailable} when tfjs ends up on any other backend
 */
export function initWasmBackend(): Promise<void> {
  ready ??= (async () => {
    shareIdentityBuffers();
    installBatchedXnnMatMul();
    await tf.setBackend("wasm");
    await tf.ready();
    assertWasmBackend();
  })();
  return ready;
}

/**
 * Throws unless the active tfjs backend is wasm (call before heavy numeric work).
 * @throws {WasmBackendUnavailable} when another backend is active
 */
export function assertWasmBackend(): void {
  const actual = tf.getBackend();
  if (actual !== "wasm") throw new WasmBackendUnavailable(actual);
}
