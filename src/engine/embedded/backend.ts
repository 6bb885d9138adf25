/**
 * @module Starts tfjs on its wasm backend and refuses to run on anything else: tfjs silently falls back to its pure-JS
 * `cpu` backend (10–25× slower) when wasm fails to load, which would pass every test and miss every speed target.
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

/**
 * Selects the wasm backend once per process and asserts it is active. Safe to call many times; later calls share
 * the first one's promise.
 * @returns resolves when tfjs is ready on wasm
 * @throws {WasmBackendUnavailable} when tfjs ends up on any other backend
 */
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

/**
 * Throws unless the active tfjs backend is wasm (call before heavy numeric work).
 * @throws {WasmBackendUnavailable} when another backend is active
 */
export function assertWasmBackend(): void {
  const actual = tf.getBackend();
  if (actual !== "wasm") throw new WasmBackendUnavailable(actual);
}
