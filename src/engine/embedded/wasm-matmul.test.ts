/** @module wasm-matmul.ts's kernels on the fused multiply-add path (relaxed SIMD, this runtime's default). */
import { matmulSuite } from "./wasm-matmul.suite.js";

matmulSuite("gemm");
