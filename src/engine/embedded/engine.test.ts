/** @module Runs the Engine contract suite against the embedded engine. */
import { runEngineContract } from "../engine.contract.js";
import { EmbeddedEngine } from "./engine.js";

runEngineContract("embedded", () =>
  EmbeddedEngine.create({ config: { vocab: 261, d_model: 32, n_layers: 1, n_heads: 2, context: 24 }, seed: 2 }),
);
