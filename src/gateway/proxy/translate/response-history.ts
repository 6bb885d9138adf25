/**
 * @module The Responses API objects the gateway served, per rollout, so that `previous_response_id` and
 * `item_reference` can be expanded into chat messages. Kept in memory (a gateway restart forgets them), bounded by a
 * count: the oldest responses go first.
 */
import type { Json } from "./translation.js";

/** A served response, as the next call needs it. */
export interface StoredResponse {
  rolloutId: string;
  /** The chat messages of the conversation up to and including this response's answer, `instructions` excluded. */
  conversation: Json[];
  /** Chat message of each output item id (a message, or an assistant message holding one tool call). */
  items: Map<string, Json>;
}

/** Responses kept per gateway when nothing else is said. */
export const DEFAULT_MAX_RESPONSES = 10_000;

/** Served responses by id, scoped to their rollout, oldest evicted first. */
export class ResponseHistory {
  private readonly responses = new Map<string, StoredResponse>();
  private readonly itemOwner = new Map<string, string>();

  /** @param maxResponses - most responses kept at once */
  constructor(private readonly maxResponses = DEFAULT_MAX_RESPONSES) {}

  /** Keeps a served response under its `resp_…` id. */
  put(responseId: string, stored: StoredResponse): void {
    this.responses.set(responseId, stored);
    for (const itemId of stored.items.keys()) this.itemOwner.set(itemId, responseId);
    while (this.responses.size > this.maxResponses) {
      const [oldest, evicted] = this.responses.entries().next().value as [string, StoredResponse];
      this.responses.delete(oldest);
      for (const itemId of evicted.items.keys()) {
        if (this.itemOwner.get(itemId) === oldest) this.itemOwner.delete(itemId);
      }
    }
  }

  /**
   * @param rolloutId - the asking rollout (another rollout's responses are invisible)
   * @param responseId - a `previous_response_id`
   * @returns the stored response, or undefined
   */
  response(rolloutId: string, responseId: string): StoredResponse | undefined {
    const stored = this.responses.get(responseId);
    return stored?.rolloutId === rolloutId ? stored : undefined;
  }

  /**
   * @param rolloutId - the asking rollout
   * @param itemId - an `item_reference` id (`msg_…`, `fc_…`)
   * @returns the chat message of that output item, or undefined
   */
  item(rolloutId: string, itemId: string): Json | undefined {
    const owner = this.itemOwner.get(itemId);
    return owner === undefined ? undefined : this.response(rolloutId, owner)?.items.get(itemId);
  }

  /** Number of responses kept. */
  get size(): number {
    return this.responses.size;
  }
}
