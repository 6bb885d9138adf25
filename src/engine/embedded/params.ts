/** @module The GPT's weights: names (safetensors keys), shapes, and GPT-2 initialisation from a seed. */
import * as tf from "@tensorflow/tfjs";
import type { ModelConfig } from "./config.js";
import { Rng } from "./rng.js";

/** Weights of one transformer block. */
export interface BlockParams {
  ln1Gain: tf.Variable;
  ln1Bias: tf.Variable;
  /** Fused query/key/value projection, [C, 3C]. */
  qkvWeight: tf.Variable;
  qkvBias: tf.Variable;
  /** Attention output projection, [C, C]. */
  outWeight: tf.Variable;
  outBias: tf.Variable;
  ln2Gain: tf.Variable;
  ln2Bias: tf.Variable;
  /** MLP up projection, [C, 4C]. */
  upWeight: tf.Variable;
  upBias: tf.Variable;
  /** MLP down projection, [4C, C]. */
  downWeight: tf.Variable;
  downBias: tf.Variable;
}

/** All weights of the GPT. */
export interface GptParams {
  /** Token embedding, [V, C]. */
  tokenEmbedding: tf.Variable;
  /** Learned position embedding, [context, C]. */
  positionEmbedding: tf.Variable;
  blocks: BlockParams[];
  lnfGain: tf.Variable;
  lnfBias: tf.Variable;
  /** Untied output head, [C, V]. */
  head: tf.Variable;
}

type Init = { kind: "normal"; std: number } | { kind: "ones" } | { kind: "zeros" };

/** One weight's name, shape and initialiser, in the fixed order used for init, checkpoints and the optimizer. */
export interface ParamSpec {
  name: string;
  shape: number[];
  init: Init;
}

/** Every weight of a config, in initialisation and checkpoint order. */
export function paramSpecs(config: ModelConfig): ParamSpec[] {
  const c = config.d_model;
  const std = 0.02;
  const residualStd = std / Math.sqrt(2 * config.n_layers);
  const specs: ParamSpec[] = [
    { name: "wte", shape: [config.vocab, c], init: { kind: "normal", std } },
    { name: "wpe", shape: [config.context, c], init: { kind: "normal", std } },
  ];
  for (let l = 0; l < config.n_layers; l++) {
    const p = `h.${l}.`;
    specs.push(
      { name: `${p}ln_1.weight`, shape: [c], init: { kind: "ones" } },
      { name: `${p}ln_1.bias`, shape: [c], init: { kind: "zeros" } },
      { name: `${p}attn.c_attn.weight`, shape: [c, 3 * c], init: { kind: "normal", std } },
      { name: `${p}attn.c_attn.bias`, shape: [3 * c], init: { kind: "zeros" } },
      { name: `${p}attn.c_proj.weight`, shape: [c, c], init: { kind: "normal", std: residualStd } },
      { name: `${p}attn.c_proj.bias`, shape: [c], init: { kind: "zeros" } },
      { name: `${p}ln_2.weight`, shape: [c], init: { kind: "ones" } },
      { name: `${p}ln_2.bias`, shape: [c], init: { kind: "zeros" } },
      { name: `${p}mlp.c_fc.weight`, shape: [c, 4 * c], init: { kind: "normal", std } },
      { name: `${p}mlp.c_fc.bias`, shape: [4 * c], init: { kind: "zeros" } },
      { name: `${p}mlp.c_proj.weight`, shape: [4 * c, c], init: { kind: "normal", std: residualStd } },
      { name: `${p}mlp.c_proj.bias`, shape: [c], init: { kind: "zeros" } },
    );
  }
  specs.push(
    { name: "ln_f.weight", shape: [c], init: { kind: "ones" } },
    { name: "ln_f.bias", shape: [c], init: { kind: "zeros" } },
    { name: "lm_head.weight", shape: [c, config.vocab], init: { kind: "normal", std } },
  );
  return specs;
}

/**
 * How `wpe` starts: `normal` N(0, 0.02) (GPT-2), or `sinusoidal` scaled to RMS 0.02, which gives attention relative
 * offsets from step 0 (PE(p+k) is linear in PE(p)), what a small model needs to copy from its prompt.
 * @see Vaswani et al., "Attention Is All You Need", 2017, section 3.5
 */
export type PositionInit = "normal" | "sinusoidal";

/** RMS of the sinusoidal start: the normal init's standard deviation. */
const POSITION_RMS = 0.02;

/** [context, C] row-major: PE(p, 2i) = a·sin(p / 10000^(2i/C)), PE(p, 2i+1) = a·cos(…), a = 0.02·√2 (RMS 0.02). */
export function sinusoidalPositions(context: number, channels: number): Float32Array {
  const amplitude = POSITION_RMS * Math.SQRT2;
  const data = new Float32Array(context * channels);
  for (let p = 0; p < context; p++) {
    for (let c = 0; c < channels; c++) {
      const pair = Math.floor(c / 2);
      const angle = p / 10000 ** ((2 * pair) / channels);
      data[p * channels + c] = amplitude * (c % 2 === 0 ? Math.sin(angle) : Math.cos(angle));
    }
  }
  return data;
}

/** Initial weights from a seed, bit-identical everywhere, in {@link paramSpecs} order. */
export function initialValues(
  config: ModelConfig,
  seed: number,
  positionInit: PositionInit = "normal",
): Map<string, Float32Array> {
  const rng = new Rng(seed);
  const values = new Map<string, Float32Array>();
  for (const spec of paramSpecs(config)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (spec.init.kind === "ones") data.fill(1);
    else if (spec.init.kind === "normal") for (let i = 0; i < size; i++) data[i] = rng.nextGaussian() * spec.init.std;
    values.set(spec.name, data);
  }
  if (positionInit === "sinusoidal") values.set("wpe", sinusoidalPositions(config.context, config.d_model));
  return values;
}

/** tfjs variables from named values, grouped per block. @throws {RangeError} on a missing or mis-sized weight */
export function buildParams(
  config: ModelConfig,
  values: Map<string, Float32Array>,
): { params: GptParams; byName: Map<string, tf.Variable> } {
  const byName = new Map<string, tf.Variable>();
  for (const spec of paramSpecs(config)) {
    const data = values.get(spec.name);
    const size = spec.shape.reduce((a, b) => a * b, 1);
    if (!data || data.length !== size)
      throw new RangeError(`weight ${spec.name}: expected ${size} values of shape [${spec.shape}]`);
    // Unnamed: tfjs variable names are process-global and several models may live in one process.
    const initial = tf.tensor(data, spec.shape, "float32");
    byName.set(spec.name, tf.variable(initial, true));
    initial.dispose();
  }
  const get = (name: string): tf.Variable => byName.get(name)!;
  const blocks: BlockParams[] = [];
  for (let l = 0; l < config.n_layers; l++) {
    const p = `h.${l}.`;
    blocks.push({
      ln1Gain: get(`${p}ln_1.weight`),
      ln1Bias: get(`${p}ln_1.bias`),
      qkvWeight: get(`${p}attn.c_attn.weight`),
      qkvBias: get(`${p}attn.c_attn.bias`),
      outWeight: get(`${p}attn.c_proj.weight`),
      outBias: get(`${p}attn.c_proj.bias`),
      ln2Gain: get(`${p}ln_2.weight`),
      ln2Bias: get(`${p}ln_2.bias`),
      upWeight: get(`${p}mlp.c_fc.weight`),
      upBias: get(`${p}mlp.c_fc.bias`),
      downWeight: get(`${p}mlp.c_proj.weight`),
      downBias: get(`${p}mlp.c_proj.bias`),
    });
  }
  const params: GptParams = {
    tokenEmbedding: get("wte"),
    positionEmbedding: get("wpe"),
    blocks,
    lnfGain: get("ln_f.weight"),
    lnfBias: get("ln_f.bias"),
    head: get("lm_head.weight"),
  };
  return { params, byName };
}
