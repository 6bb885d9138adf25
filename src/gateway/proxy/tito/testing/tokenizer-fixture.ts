/**
 * @module Tokenizer folders for `tito` tests: the repository's real byte-level BPE tokenizer (a Qwen2-style vocabulary
 * trained offline by python/scripts/build_tokenizer.py) with its own Qwen2-style template, or with the Qwen3-style
 * template beside this file (tools, Hermes tool calls, `<think>` stripped from history).
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The repository's tokenizer folder (tokenizer.json + tokenizer_config.json with a Qwen2-style chat template). */
export const QWEN2_TOKENIZER_DIR = resolve(here, "../../../../../python/arclight_torch/assets/tokenizer");

/**
 * A temporary tokenizer folder: the repository's tokenizer with the Qwen3-style template as `chat_template.jinja`.
 * @returns the folder's path (left for the OS to clean, as every test temp dir here)
 */
export function qwen3TokenizerDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "arclight-qwen3-tok-"));
  copyFileSync(join(QWEN2_TOKENIZER_DIR, "tokenizer.json"), join(dir, "tokenizer.json"));
  const config = JSON.parse(readFileSync(join(QWEN2_TOKENIZER_DIR, "tokenizer_config.json"), "utf8"));
  delete config.chat_template;
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(config));
  copyFileSync(join(here, "qwen3-chat-template.jinja"), join(dir, "chat_template.jinja"));
  return dir;
}
