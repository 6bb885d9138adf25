/** @module Configuration of `arclight engine serve`: a strict zod schema with defaults (flags are parsed into it). */
import { z } from "zod";
import { REASONING_PARSERS } from "../../wire/reasoning.js";
import { TOOL_CALL_PARSERS } from "../../wire/tool-calls.js";

/** Settings of one engine server process. */
export const EngineServeConfigSchema = z
  .object({
    /** `new:<preset>` (fresh weights from a preset: tiny, agent, bench, small) or a checkpoint directory. */
    model: z.string().min(1).default("new:agent").describe("new:<preset> or a checkpoint directory"),
    host: z.string().min(1).default("127.0.0.1").describe("interface to listen on"),
    port: z.number().int().min(0).max(65535).default(8000).describe("TCP port (0 picks a free one)"),
    seed: z.number().int().default(0).describe("weight-init seed of new:<preset> models"),
    decode_threads: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(1)
      .describe("embedded: threads that decode (this one and decode worker threads; docs/engine.md)"),
    /** Defaults to the preset name or the checkpoint directory's base name. */
    model_name: z.string().min(1).optional().describe("model name served in /v1/models and answers"),
    log_level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    checkpoint_root: z
      .string()
      .min(1)
      .optional()
      .describe("the only directory tree /v1/load_weights may read (symlinks resolved); absent: load_weights is off"),
    tool_call_parser: z
      .enum(Object.keys(TOOL_CALL_PARSERS) as [string, ...string[]])
      .default("hermes")
      .describe("how tool calls are read from generated text (vLLM's --tool-call-parser names)"),
    reasoning_parser: z
      .enum(Object.keys(REASONING_PARSERS) as [string, ...string[]])
      .optional()
      .describe("split <think> text into message.reasoning (vLLM's --reasoning-parser names); absent: none"),
    shutdown_grace_seconds: z
      .number()
      .min(0)
      .default(30)
      .describe("on SIGTERM/SIGINT, seconds in-flight requests get before every open socket is closed"),
  })
  .strict();

/** Parsed engine server settings. */
export type EngineServeConfig = z.infer<typeof EngineServeConfigSchema>;
