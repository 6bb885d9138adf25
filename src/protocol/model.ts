/** @module Model endpoint registration: which OpenAI-compatible servers serve a model, at which policy version. */
import { z } from "zod";
import { wellFormedString } from "./text.js";

/** A registered model endpoint, keyed by (model, endpoint). `version` is the policy version its weights carry. */
export const ModelSchema = z.strictObject({
  model: wellFormedString(1),
  endpoint: z.url({ protocol: /^https?$/ }).describe("base URL of an OpenAI-compatible server, e.g. http://h:8000/v1"),
  version: z.number().int().min(0).default(0),
});
/** A registered model endpoint. */
export type Model = z.infer<typeof ModelSchema>;
/** A model endpoint as a caller writes it. */
export type ModelInput = z.input<typeof ModelSchema>;
