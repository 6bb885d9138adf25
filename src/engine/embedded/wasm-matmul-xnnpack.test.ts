/**
 * @module wasm-matmul.ts's kernels on XNNPACK: `ARCLIGHT_WASM_FMA=0` turns the fused multiply-add kernel off (vitest
 * runs each test file in its own process, and `gemmAvailable` decides once per process, at its first call).
 */
import { gemmAvailable } from "./wasm-gemm.js";

process.env.ARCLIGHT_WASM_FMA = "0";
gemmAvailable();
delete process.env.ARCLIGHT_WASM_FMA;
const { matmulSuite } = await import("./wasm-matmul.suite.js");
matmulSuite("xnnpack");
