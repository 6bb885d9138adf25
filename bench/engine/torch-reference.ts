/**
 * @module The PyTorch column of bench/engine.ts: drives `bench/engine-torch.py` (the same pre-LN GPT in plain PyTorch)
 * as a child process, one command per line, so the bench can interleave its rounds with the embedded engine's.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import type { ModelConfig } from "../../src/engine/embedded/config.js";

/** Wall and CPU seconds of one command in the Python process. */
export interface TorchTiming {
  seconds: number;
  cpu_seconds: number;
}

/** A running PyTorch reference model; {@link TorchReference.start} builds one. */
export class TorchReference {
  private readonly lines: AsyncIterator<string>;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly reader: Interface,
    /** Torch version, thread count and parameter count, as the Python process reports them. */
    readonly header: { torch: string; threads: number; params: number },
  ) {
    this.lines = reader[Symbol.asyncIterator]();
  }

  /**
   * Starts the reference on `python`, or says why it cannot.
   * @param python - interpreter path (null: none found)
   * @param config - the embedded model's shape
   * @param threads - torch intra-op threads
   * @returns the reference, or a one-line reason it is missing
   */
  static async start(python: string | null, config: ModelConfig, threads: number): Promise<TorchReference | string> {
    if (!python) return "no Python venv (.venv/bin/python or ARCLIGHT_PYTHON)";
    const script = new URL("../engine-torch.py", import.meta.url).pathname;
    const args = [script, "--threads", String(threads), "--vocab", String(config.vocab)];
    args.push("--d-model", String(config.d_model), "--layers", String(config.n_layers));
    args.push("--heads", String(config.n_heads), "--context", String(config.context));
    const child = spawn(python, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const reader = createInterface({ input: child.stdout });
    const first = await reader[Symbol.asyncIterator]().next();
    if (first.done) {
      const last = stderr.trim().split("\n").at(-1) ?? `exit ${child.exitCode}`;
      return `${python} could not run the PyTorch reference: ${last}`;
    }
    return new TorchReference(child, reader, JSON.parse(first.value));
  }

  /** One AdamW step on `batch` rows of `seqLen` ids. */
  train(batch: number, seqLen: number): Promise<TorchTiming> {
    return this.ask(`train ${batch} ${seqLen}`) as Promise<TorchTiming>;
  }

  /** Batched KV-cache sampling: `rows` prompts of `promptLen` ids, `newTokens` each. */
  sample(rows: number, promptLen: number, newTokens: number): Promise<TorchTiming> {
    return this.ask(`sample ${rows} ${promptLen} ${newTokens}`) as Promise<TorchTiming>;
  }

  /** Sets torch's intra-op thread count for the following commands. */
  async threads(count: number): Promise<void> {
    await this.ask(`threads ${count}`);
  }

  /** Best GFLOP/s of one [n, k] @ [k, m] float32 product. */
  async matmulGflops(n: number, k: number, m: number): Promise<number> {
    return ((await this.ask(`matmul ${n} ${k} ${m}`)) as { gflops: number }).gflops;
  }

  /** Ends the Python process. */
  close(): void {
    this.reader.close();
    this.child.stdin.end();
  }

  private async ask(command: string): Promise<unknown> {
    this.child.stdin.write(`${command}\n`);
    const line = await this.lines.next();
    if (line.done) throw new Error(`PyTorch reference exited during "${command}"`);
    return JSON.parse(line.value);
  }
}
