/**
 * @module The calculator teacher as an OpenAI-compatible server: arclight's engine server (`/v1/chat/completions` in
 * vLLM's shape, `token_ids` and `prompt_token_ids` included) serving the {@link TeacherEngine}. Register it with the
 * gateway as the model endpoint and run the real agent under the controller: the gateway records demonstrations as
 * ordinary triplets, ready for SFT.
 *
 * Run: `npx tsx examples/calculator/teacher-server.ts [--port N] [--mental-math-share X] [--model-name NAME]
 * [--hf-tokenizer DIR --vocab-size V]` (NAME default `teacher`); prints `teacher listening on http://127.0.0.1:N/v1`. `--hf-tokenizer` writes the ids of a Hugging
 * Face policy (the torch engine's tokenizer folder) instead of the embedded policy's bytes.
 * once it listens, and stops on SIGTERM or SIGINT.
 */
import { pathToFileURL } from "node:url";
import type { FastifyInstance } from "fastify";
import { buildEngineServer } from "../../src/engine/server/app.js";
import { stopWhenParentGone } from "../../src/process/parent-watch.js";
import type { TeacherOptions } from "./teacher.js";
import { hfCodec } from "./teacher-codec-hf.js";
import { byteCodec, type TeacherCodec, TeacherEngine } from "./teacher-engine.js";

/**
 * Starts the teacher server on 127.0.0.1.
 * @param port - TCP port; 0 picks a free one
 * @param options - how the teacher behaves (see {@link TeacherOptions})
 * @param codec - the policy's tokens (default the embedded policy's bytes)
 * @param modelName - the model name it serves (like vLLM's `--served-model-name`: requests naming another are 404);
 *   register it with the gateway under this name
 * @returns the server and its OpenAI base URL (ending in `/v1`)
 */
export async function startTeacherServer(
  port = 0,
  options: TeacherOptions = {},
  codec: TeacherCodec = byteCodec(),
  modelName = "teacher",
): Promise<{ server: FastifyInstance; endpoint: string }> {
  const server = await buildEngineServer({ engine: new TeacherEngine(256, options, codec), modelName });
  const url = await server.listen({ host: "127.0.0.1", port });
  return { server, endpoint: `${url}/v1` };
}

/** Parses `--port N` (default 0). */
function portFlag(argv: readonly string[]): number {
  const index = argv.indexOf("--port");
  if (index < 0) return 0;
  const port = Number(argv[index + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port ${argv[index + 1]}: expected an integer in 0..65535`);
  }
  return port;
}

/** Parses `--mental-math-share X` (default 0): see {@link TeacherOptions}. */
function mentalMathFlag(argv: readonly string[]): number {
  const index = argv.indexOf("--mental-math-share");
  if (index < 0) return 0;
  const share = Number(argv[index + 1]);
  if (!Number.isFinite(share) || share < 0 || share > 1) {
    throw new Error(`--mental-math-share ${argv[index + 1]}: expected a number in [0, 1]`);
  }
  return share;
}

/** The codec `--hf-tokenizer DIR --vocab-size V` names (default the byte codec). */
function codecFlag(argv: readonly string[]): TeacherCodec {
  const index = argv.indexOf("--hf-tokenizer");
  if (index < 0) return byteCodec();
  const vocab = Number(argv[argv.indexOf("--vocab-size") + 1]);
  if (!Number.isInteger(vocab) || vocab < 1) throw new Error("--hf-tokenizer needs --vocab-size N (the model's)");
  return hfCodec(argv[index + 1] as string, vocab);
}

async function main(): Promise<void> {
  const options = { mentalMathShare: mentalMathFlag(process.argv) };
  const name = process.argv.includes("--model-name")
    ? process.argv[process.argv.indexOf("--model-name") + 1]
    : undefined;
  const { server, endpoint } = await startTeacherServer(
    portFlag(process.argv),
    options,
    codecFlag(process.argv),
    name ?? "teacher",
  );
  // The parent reads this line through a pipe; once that parent is gone (killed outright), a failed write is no error.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
  });
  console.log(`teacher listening on ${endpoint}`);
  const stop = () => void server.close();
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  stopWhenParentGone(); // the demo that started it was killed outright: stop too
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(`teacher server: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  });
}
