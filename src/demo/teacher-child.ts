/**
 * @module The demo's teacher as a server child process (`examples/calculator/teacher-server.ts` under tsx), running
 * while demonstrations are recorded.
 */
import { startServerChild } from "../process/server-child.js";
import { CALCULATOR_DIR } from "./settings.js";

/** The teacher server child process. */
export interface TeacherChild {
  /** OpenAI base URL (`…/v1`). */
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts `examples/calculator/teacher-server.ts` (under tsx) on a free port, serving the model name `policy`, and
 * waits for its URL line.
 * @param mentalMathShare - share of one-operation questions the teacher answers without the tool, in [0, 1]
 *   (`--mental-math-share`, see the teacher's `TeacherOptions`)
 * @param hfTokenizer - write a Hugging Face policy's ids (its tokenizer folder and vocabulary size); default the
 *   embedded policy's bytes
 * @returns the endpoint and a stop function
 * @throws {Error} when it exits or does not report its URL within 30 s
 */
export async function startTeacherChild(
  mentalMathShare = 0,
  hfTokenizer?: { dir: string; vocabSize: number },
): Promise<TeacherChild> {
  const script = `${CALCULATOR_DIR}teacher-server.ts`;
  const tsx = import.meta.resolve("tsx");
  const codec = hfTokenizer ? ["--hf-tokenizer", hfTokenizer.dir, "--vocab-size", String(hfTokenizer.vocabSize)] : [];
  const child = await startServerChild({
    argv: [
      process.execPath,
      ...["--import", tsx, script, "--port", "0", "--mental-math-share", String(mentalMathShare)],
      // Served as "policy", the name arclight registers a policy's endpoints under (the engine server answers 404 for
      // a model name it does not serve, as vLLM does).
      ...["--model-name", "policy"],
      ...codec,
    ],
    urlPattern: /teacher listening on (http:\/\/\S+)/,
    what: "teacher server",
  });
  return { endpoint: child.url, stop: child.stop };
}
