/**
 * @module Starts tfjs on wasm and refuses anything else: tfjs silently falls back to its far slower `cpu` backend
 * when wasm fails to load.
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import { installAdamwKernel } from "./wasm-adamw.js";
import { installAttentionKernels } from "./wasm-attention.js";
import { installBackwardKernels } from "./wasm-backward.js";
import { installDecodeKernels } from "./wasm-decode.js";
import { installExpKernel } from "./wasm-exp.js";
import { installLeanKernels } from "./wasm-kernels.js";
import { installLayerNormKernel } from "./wasm-layer-norm.js";
import { installAffineKernel, installBatchedXnnMatMul } from "./wasm-matmul.js";

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

/** Selects wasm once per process (later calls share the promise). @throws {WasmBackendUnavailable} */
export function initWasmBackend(): Promise<void> {
  ready ??= (async () => {
    installLeanKernels();
    installBatchedXnnMatMul();
    installAffineKernel();
    installLayerNormKernel();
    installDecodeKernels();
    installBackwardKernels();
    installAttentionKernels();
    installAdamwKernel();
    installExpKernel();
    await tf.setBackend("wasm");
    await tf.ready();
    assertWasmBackend();
  })();
  return ready;
}

/** @throws {WasmBackendUnavailable} unless the active tfjs backend is wasm */
export function assertWasmBackend(): void {
  const actual = tf.getBackend();
  if (actual !== "wasm") throw new WasmBackendUnavailable(actual);
}
