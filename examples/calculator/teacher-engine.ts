/**
 * @module The scripted teacher as an `Engine`: it reads the chat back from the rendered prompt ids and "generates"
 * the teacher's next assistant turn as token ids. Served by arclight's own engine server (`buildEngineServer`), it is
 * an OpenAI-compatible endpoint whose answers carry exactly the ids the embedded engine would have produced for the
 * same turn, so demonstrations recorded through the gateway train the policy token for token.
 */

import type { ChatTemplate } from "../../src/engine/chat-template.js";
import { ChatMLTemplate, toolCallText } from "../../src/engine/embedded/chat-template.js";
import { ByteTokenizer } from "../../src/engine/embedded/tokenizer.js";
import type {
  Engine,
  GenerationRequest,
  GenerationResult,
  LossConfig,
  OptimizerConfig,
  TrainMetrics,
  TrainRow,
} from "../../src/engine/engine.js";
import type { Tokenizer } from "../../src/engine/tokenizer.js";
import { type ChatMessage, type TeacherOptions, type TeacherReply, teacherReply } from "./teacher.js";

/** A chat turn read back from a rendered prompt. */
interface Turn {
  role: string;
  text: string;
}

/**
 * Splits a rendered ChatML prompt (specials written as their strings) into turns: `<|im_start|>ROLE\nTEXT<|im_end|>`.
 * Assistant turns keep their raw text (tool calls included); the teacher only reads the user and tool turns.
 * @param text - the decoded prompt, e.g. `<|im_start|>user\n2+2<|im_end|>\n<|im_start|>assistant\n`
 * @returns the closed turns, oldest first (the open generation prompt is left out)
 */
export function promptTurns(text: string): Turn[] {
  const turns: Turn[] = [];
  const pattern = /<\|im_start\|>([a-z]+)\n([\s\S]*?)<\|im_end\|>/g;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    turns.push({ role: match[1] as string, text: match[2] as string });
  }
  return turns;
}

/** The chat as the teacher reads it: user and tool turns as messages, an assistant turn as a (tool-calling) turn. */
export function teacherMessages(turns: readonly Turn[]): ChatMessage[] {
  return turns
    .filter((turn) => turn.role !== "system")
    .map((turn) =>
      turn.role === "assistant" && turn.text.includes("<tool_call>")
        ? { role: "assistant", content: null, tool_calls: [] }
        : { role: turn.role, content: turn.text },
    );
}

/**
 * How the teacher reads a prompt and writes its turn in one policy's tokens: the policy's tokenizer and chat template
 * (the engine server renders prompts with them), the id that ends a turn, and the turn's ids.
 */
export interface TeacherCodec {
  readonly tokenizer: Tokenizer;
  readonly chatTemplate: ChatTemplate;
  /** The id that ends an assistant turn (`<|im_end|>`). */
  readonly endId: number;
  /** The chat a rendered prompt holds, as the teacher reads it. @throws when it cannot be read */
  messages(promptTokenIds: readonly number[]): ChatMessage[];
  /** The ids the policy's template gives the reply after the generation prompt, `endId` last. */
  replyIds(reply: TeacherReply): number[];
}

/**
 * The embedded policy's codec: byte tokenizer and ChatML (`<tool_call>{"name": …, "arguments": …}</tool_call>`).
 * @returns the codec
 */
export function byteCodec(): TeacherCodec {
  const tokenizer = new ByteTokenizer();
  return {
    tokenizer,
    chatTemplate: new ChatMLTemplate(tokenizer),
    endId: tokenizer.imEndId,
    messages: (ids) => teacherMessages(promptTurns(tokenizer.decode(ids, false))),
    replyIds(reply) {
      if (!("tool_calls" in reply)) return [...tokenizer.encode(reply.content), tokenizer.imEndId];
      const calls = reply.tool_calls.flatMap((call) => [
        tokenizer.toolCallStartId,
        ...tokenizer.encode(toolCallText(call)),
        tokenizer.toolCallEndId,
      ]);
      return [...calls, tokenizer.imEndId];
    },
  };
}

/**
 * An `Engine` that answers every chat with the calculator teacher's next turn. Generation is deterministic and its
 * logprobs are 0 (the teacher is certain); training and checkpoints are not supported.
 */
export class TeacherEngine implements Engine {
  readonly policyVersion = 0;
  readonly contextLength: number;
  /** The policy's tokenizer, so recorded ids train it token for token. */
  readonly tokenizer: Tokenizer;
  /** The policy's chat template. */
  readonly chatTemplate: ChatTemplate;

  private readonly options: TeacherOptions;
  private readonly codec: TeacherCodec;

  /**
   * @param contextLength - context reported to the server (tokens); default 256, the tiny policy's
   * @param options - how the teacher behaves (see {@link TeacherOptions}); default: always the tool
   * @param codec - the policy's tokens; default the embedded policy's ({@link byteCodec})
   */
  constructor(contextLength = 256, options: TeacherOptions = {}, codec: TeacherCodec = byteCodec()) {
    this.contextLength = contextLength;
    this.options = options;
    this.codec = codec;
    this.tokenizer = codec.tokenizer;
    this.chatTemplate = codec.chatTemplate;
  }

  /**
   * The teacher's next assistant turn as ids: `<tool_call>{"name": …, "arguments": …}</tool_call><|im_end|>`, or the
   * answer text then `<|im_end|>`; a chat the teacher cannot read gets an empty turn (`<|im_end|>` only).
   */
  turnIds(promptTokenIds: readonly number[]): number[] {
    let reply: TeacherReply;
    try {
      reply = teacherReply(this.codec.messages(promptTokenIds), this.options);
    } catch {
      return [this.codec.endId];
    }
    return this.codec.replyIds(reply);
  }

  async generate(requests: GenerationRequest[]): Promise<GenerationResult[]> {
    return requests.map((request) => {
      const tokenIds = this.turnIds(request.promptTokenIds);
      return {
        promptTokenIds: request.promptTokenIds,
        tokenIds,
        logprobs: tokenIds.map(() => 0),
        finishReason: "stop",
        stopReason: this.codec.endId,
        policyVersion: this.policyVersion,
      };
    });
  }

  async logprobs(tokenIds_B_T: number[][]): Promise<number[][]> {
    return tokenIds_B_T.map((row) => row.map(() => 0));
  }

  /** @throws {Error} always: the teacher is scripted */
  async trainStep(_rows: TrainRow[], _loss: LossConfig, _optimizer: OptimizerConfig): Promise<TrainMetrics> {
    throw new Error("the teacher engine cannot be trained");
  }

  /** @throws {Error} always: the teacher has no weights */
  async saveCheckpoint(_dir: string): Promise<void> {
    throw new Error("the teacher engine has no weights to save");
  }

  /** @throws {Error} always: the teacher has no weights */
  async loadCheckpoint(_dir: string): Promise<void> {
    throw new Error("the teacher engine has no weights to load");
  }

  /** Nothing to reset: the teacher has no optimiser. */
  resetOptimizer(): void {}

  dispose(): void {}
}
