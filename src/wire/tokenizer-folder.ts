/** @module A Hugging Face tokenizer and chat template read from a model folder, parsed once per folder. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { BadRequest, quoteStart } from "../protocol/index.js";
import { JinjaChatTemplate } from "./chat-template.js";
import { HfTokenizer } from "./hf-tokenizer.js";

/** A model's tokenizer, its chat template and its end-of-turn token. */
export interface TokenizerFolder {
  /** The folder it was read from. */
  folder: string;
  tokenizer: HfTokenizer;
  template: JinjaChatTemplate;
  /** The token that ends an assistant turn (`eos_token`, e.g. `<|im_end|>`) and its id. */
  endOfTurn: { text: string; id: number };
}

function readJson(path: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    // A system error's message repeats the path: its code says the same in a word (ENOENT, EACCES, EISDIR).
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new BadRequest(`tito tokenizer: cannot read ${what} (${quoteStart(path, 300)}): ${reason}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new BadRequest(`tito tokenizer: ${what} (${quoteStart(path, 300)}) is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** The chat template's source: `chat_template.jinja` beside the config, else the config's `chat_template` string. */
function templateSource(folder: string, config: Record<string, unknown>): string {
  const file = join(folder, "chat_template.jinja");
  if (existsSync(file)) return readFileSync(file, "utf8");
  const source = config.chat_template;
  if (typeof source === "string" && source !== "") return source;
  throw new BadRequest(
    `tito tokenizer: ${folder} has no chat template (no chat_template.jinja, no chat_template in tokenizer_config.json)`,
  );
}

/** Reads a model's tokenizer folder. @throws {BadRequest} naming the folder and file at fault */
export function readTokenizerFolder(folder: string): TokenizerFolder {
  const tokenizerJson = readJson(join(folder, "tokenizer.json"), "tokenizer.json");
  const config = readJson(join(folder, "tokenizer_config.json"), "tokenizer_config.json");
  let template: JinjaChatTemplate;
  try {
    template = new JinjaChatTemplate(templateSource(folder, config), config);
  } catch (err) {
    if (err instanceof BadRequest) throw err;
    throw new BadRequest(`tito tokenizer: the chat template of ${folder} does not compile: ${(err as Error).message}`);
  }
  const model = tokenizerJson.model as { vocab?: Record<string, number> } | undefined;
  const added = (tokenizerJson.added_tokens ?? []) as { id: number }[];
  const vocabSize = Math.max(Object.keys(model?.vocab ?? {}).length, ...added.map((t) => t.id + 1));
  let tokenizer: HfTokenizer;
  try {
    tokenizer = new HfTokenizer({ tokenizer: tokenizerJson, config }, vocabSize);
  } catch (err) {
    throw new BadRequest(`tito tokenizer: ${folder}: ${(err as Error).message}`);
  }
  return { folder, tokenizer, template, endOfTurn: { text: template.specials.eos_token, id: tokenizer.eosId } };
}

/** Tokenizer folders read once each and kept (a gateway serves few models). */
export class TokenizerFolders {
  private readonly cache = new Map<string, TokenizerFolder>();

  /** The folder's tokenizer, read on first use. @throws {BadRequest} */
  get(folder: string): TokenizerFolder {
    let found = this.cache.get(folder);
    if (!found) {
      found = readTokenizerFolder(folder);
      this.cache.set(folder, found);
    }
    return found;
  }
}
