/**
 * @module AdamW with decoupled weight decay and global-norm clipping, state exposed so training resumes bit-exactly.
 * @see Loshchilov & Hutter, arXiv:1711.05101 (Algorithm 2); Kingma & Ba, arXiv:1412.6980
 */
import * as tf from "@tensorflow/tfjs";
import { adamwUpdate } from "./wasm-adamw.js";

/** Constants of the optimiser that do not change between steps. */
export interface AdamWConstants {
  beta1: number;
  beta2: number;
  epsilon: number;
}

/** Defaults of `torch.optim.AdamW`. */
export const ADAMW_DEFAULTS: AdamWConstants = { beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };

/** One parameter's update inputs. */
export interface AdamWParam {
  name: string;
  variable: tf.Variable;
  /** Whether decoupled weight decay applies (matrices and embeddings yes; biases and norm gains no). */
  decay: boolean;
}

/** AdamW state and update. */
export class AdamW {
  /** Updates applied so far (t in the paper). */
  step = 0;
  /** beta1, beta2 and epsilon, fixed for the optimiser's life (saved with a checkpoint). */
  readonly constants: AdamWConstants;
  /** First moments by parameter name. */
  readonly m = new Map<string, tf.Variable>();
  /** Second moments by parameter name. */
  readonly v = new Map<string, tf.Variable>();

  /** @param constants - betas and epsilon */
  constructor(constants: AdamWConstants = ADAMW_DEFAULTS) {
    this.constants = constants;
  }

  /**
   * m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²; θ ← θ − lr·(λ·θ + m̂/(√v̂ + ε)), λ only where `decay`. Nothing is
   * assigned (step included) unless every new value is finite.
   * @returns false when the update was refused for a non-finite value
   */
  apply(params: AdamWParam[], grads: Map<string, tf.Tensor>, learningRate: number, weightDecay: number): boolean {
    const step = this.step + 1;
    const { beta1, beta2, epsilon } = this.constants;
    const correction1 = 1 - beta1 ** step;
    const correction2 = 1 - beta2 ** step;
    const updates: {
      variable: tf.Variable;
      m: tf.Variable;
      v: tf.Variable;
      next: [tf.Tensor, tf.Tensor, tf.Tensor];
      finite: boolean;
    }[] = [];
    for (const { name, variable, decay } of params) {
      const g = grads.get(name);
      if (!g) continue;
      const m = this.moment(this.m, name, variable);
      const v = this.moment(this.v, name, variable);
      const decayFactor = decay && weightDecay > 0 ? 1 - learningRate * weightDecay : 1;
      const scalars = { beta1, beta2, correction1, correction2, epsilon, learningRate, decayFactor };
      // One wasm dispatch when it takes these tensors (the same values bit for bit), else the tfjs ops.
      const fused = adamwUpdate(variable, g, m, v, scalars);
      if (fused) {
        const [nextW, nextM, nextV] = fused.next;
        updates.push({ variable, m, v, next: [nextM, nextV, nextW], finite: fused.finite });
        continue;
      }
      const next = tf.tidy(() => {
        const nextM = tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1));
        const nextV = tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2));
        const adaptive = tf.div(tf.div(nextM, correction1), tf.add(tf.sqrt(tf.div(nextV, correction2)), epsilon));
        const decayed = decayFactor !== 1 ? tf.mul(variable, decayFactor) : variable;
        return [nextM, nextV, tf.sub(decayed, tf.mul(adaptive, learningRate))] as [tf.Tensor, tf.Tensor, tf.Tensor];
      });
      updates.push({ variable, m, v, next, finite: next.every(allFinite) });
    }
    const finite = updates.every((update) => update.finite);
    for (const { variable, m, v, next } of updates) {
      if (finite) {
        m.assign(next[0]);
        v.assign(next[1]);
        variable.assign(next[2]);
      }
      tf.dispose(next);
    }
    if (finite) this.step = step;
    return finite;
  }

  /** Restores saved moments ("m.<name>" / "v.<name>") and step. @throws {RangeError} on a size mismatch */
  restore(step: number, moments: Map<string, Float32Array>, shapes: Map<string, number[]>): void {
    this.dispose();
    this.step = step;
    for (const [key, values] of moments) {
      const [kind, ...rest] = key.split(".");
      const name = rest.join(".");
      const shape = shapes.get(name);
      const store = kind === "m" ? this.m : kind === "v" ? this.v : undefined;
      if (!shape || !store || values.length !== shape.reduce((a, b) => a * b, 1))
        throw new RangeError(`optimizer state ${key} does not match any parameter`);
      const initial = tf.tensor(values, shape, "float32");
      store.set(name, tf.variable(initial, false));
      initial.dispose();
    }
  }

  /** Frees the moments. */
  dispose(): void {
    for (const x of [...this.m.values(), ...this.v.values()]) x.dispose();
    this.m.clear();
    this.v.clear();
  }

  private moment(store: Map<string, tf.Variable>, name: string, like: tf.Variable): tf.Variable {
    let moment = store.get(name);
    if (!moment) {
      const zeros = tf.zerosLike(like);
      moment = tf.variable(zeros, false);
      zeros.dispose();
      store.set(name, moment);
    }
    return moment;
  }
}

/** True when every element of `x` is finite (no NaN, no ±Infinity). */
function allFinite(x: tf.Tensor): boolean {
  return tf.tidy(() => tf.all(tf.isFinite(x)).dataSync()[0] === 1);
}

/**
 * Clips gradients in place to global L2 norm `maxNorm` (0: off) and returns the norm before clipping.
 * @see Pascanu, Mikolov & Bengio, arXiv:1211.5063
 */
export function clipGlobalNorm(grads: Map<string, tf.Tensor>, maxNorm: number): number {
  const norm = tf.tidy(() => tf.sqrt(tf.addN([...grads.values()].map((g) => tf.sum(tf.square(g))))).dataSync()[0]!);
  if (maxNorm > 0 && norm > maxNorm) {
    const scale = maxNorm / (norm + 1e-6);
    for (const [name, g] of grads) {
      grads.set(name, tf.mul(g, scale));
      g.dispose();
    }
  }
  return norm;
}
