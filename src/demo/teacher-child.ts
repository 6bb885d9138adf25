/** @module The demo's teacher as a server child process, running while demonstrations are recorded. */
import { startServerChild } from "../process/server-child.js";
import { CALCULATOR_DIR } from "./settings.js";

/** The teacher server child process. */
export interface TeacherChild {
  /** OpenAI base URL (`…/v1`). */
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts the teacher on a free port as model `policy`; `hfTokenizer` makes it write a Hugging Face policy's ids.
 * @throws {Error} when it exits or reports no URL within 30 s
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
