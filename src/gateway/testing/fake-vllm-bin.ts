/** @module Puts the fake `vllm` executable (`fake-vllm-cli.ts`) in a folder, for tests that launch vLLM. */
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Writes `dir/vllm`, a shell script running the fake vLLM CLI under tsx (absolute paths: it runs from any folder).
 * @param dir - an existing folder, e.g. a test's temp dir (put it on PATH, or name the script as the command)
 * @returns the script's path
 */
export function writeFakeVllmBin(dir: string): string {
  const cli = fileURLToPath(new URL("./fake-vllm-cli.ts", import.meta.url));
  const script = `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --import ${JSON.stringify(import.meta.resolve("tsx"))} ${JSON.stringify(cli)} "$@"\n`;
  const path = join(dir, "vllm");
  writeFileSync(path, script);
  chmodSync(path, 0o755);
  return path;
}

/**
 * The JSON lines a fake `vllm` appended to its `FAKE_VLLM_RECORD` file.
 * @param file - the record file
 * @returns each line parsed, in order ([] when the file is missing)
 */
export function readFakeVllmRecord(file: string): Record<string, unknown>[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
