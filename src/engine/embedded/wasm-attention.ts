/**
 * @module Training's causal self-attention as one differentiable op: `attendCausal` forward (keeping the softmax),
 * `attendCausalGrad` backward, straight from and to the [N, 3C] projection, skipping the masked half of every [T, T]
 * product. Differs from tfjs ops by float32 rounding.
 */
import * as tf from "@tensorflow/tfjs";
import {
  CAUSAL_ATTENTION_KERNEL,
  decodeKernelsOn,
  heapOffset,
  registerWasmKernel,
  withScratch,
} from "./wasm-decode.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) the backward kernel uses. */
interface WasmBackendInternals {
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  disposeData(dataId: object): void;
}

/** Name of the backward kernel registered by {@link installAttentionKernels}: outputs dL/dqkv. */
export const ATTENTION_BACKWARD_KERNEL = "ArclightAttentionBackward";

/** `n` rounded up to a multiple of 4 (the kernels' vectors hold 4 floats). */
const roundedTo4 = (n: number): number => Math.ceil(n / 4) * 4;

/** Registers {@link ATTENTION_BACKWARD_KERNEL}; idempotent. */
export function installAttentionKernels(): void {
  registerWasmKernel<WasmBackendInternals>(ATTENTION_BACKWARD_KERNEL, (inputs, attrs, backend) => {
    const { qkv, k, v, p, dy } = inputs as Record<"qkv" | "k" | "v" | "p" | "dy", tf.TensorInfo>;
    const { batch, seqLen, heads } = attrs as { batch: number; seqLen: number; heads: number };
    const headDim = (qkv.shape[1] as number) / (3 * heads);
    const at = (t: tf.TensorInfo): number => heapOffset(backend, t);
    const dqkv = backend.makeOutput(qkv.shape, "float32");
    // dP and dS of one position, then dk and dv of one head
    const floats = 2 * roundedTo4(seqLen) + 2 * seqLen * headDim;
    withScratch(backend, floats, (scratch) =>
      decodeKernelsOn(backend).attendCausalGrad(
        at(qkv),
        at(k),
        at(v),
        at(p),
        at(dy),
        at(dqkv),
        scratch,
        batch,
        seqLen,
        heads,
        headDim,
        1 / Math.sqrt(headDim),
      ),
    );
    return dqkv;
  });
}

/** Whether {@link attentionFused} takes these shapes: wasm, float32, head size a multiple of 4. */
export function attentionKernelFits(qkv: tf.Tensor2D, heads: number): boolean {
  const width = qkv.shape[1];
  return (
    tf.getBackend() === "wasm" &&
    qkv.dtype === "float32" &&
    width % (3 * heads) === 0 &&
    (width / (3 * heads)) % 4 === 0
  );
}

/**
 * y = softmax(q·kᵀ/√headDim + causal mask)·v with its gradient, from qkv [B*T, 3C] to y [B*T, C]; check
 * {@link attentionKernelFits} first.
 * @throws {RangeError} when qkv is not [batch × seqLen, 3 × heads × headDim]
 * @see Vaswani et al., arXiv:1706.03762
 */
export function attentionFused(qkv: tf.Tensor2D, batch: number, seqLen: number, heads: number): tf.Tensor2D {
  if (qkv.shape[0] !== batch * seqLen || qkv.shape[1] % (3 * heads) !== 0)
    throw new RangeError(`attention: qkv [${qkv.shape}] does not fit ${batch} rows × ${seqLen} × ${heads} heads`);
  const attrs = { batch, seqLen, heads };
  const attend = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, save] = inputs as [tf.Tensor2D, tf.GradSaveFunc];
    const [y, k, v, p] = tf
      .engine()
      .runKernel(CAUSAL_ATTENTION_KERNEL, { qkv: x }, { ...attrs, keepSoftmax: true }) as tf.Tensor[];
    save([x, k!, v!, p!]);
    return {
      value: y!,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, ks, vs, ps] = saved as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
        return tf
          .engine()
          .runKernel(ATTENTION_BACKWARD_KERNEL, { qkv: xs, k: ks, v: vs, p: ps, dy }, { ...attrs }) as tf.Tensor;
      },
    };
  }) as (qkv: tf.Tensor) => tf.Tensor2D;
  return attend(qkv);
}
