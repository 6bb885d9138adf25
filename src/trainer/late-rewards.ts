/**
 * @module Rewards that arrive after the trainer read their rollout. The gateway stores events posted after a rollout
 * finished (AGL hooks post rewards then; they carry `late: true`). Rule: a reward stored before the trainer reads the
 * rollout's events counts like any other; one stored after is never trained and never mixed into a later step (the
 * trainer does not read a rollout twice), but it is reported: the next step re-reads the reward events of the
 * rollouts trained before and counts those past what it read (`late_rewards_missed`, with a warning naming them).
 * Each rollout is checked once, one step after it was read; a reward later still is only counted by the gateway
 * (`arclight_late_events_total`).
 */
import type { GatewayClient } from "../gateway/client.js";

/** One rollout as the trainer read it: the highest event `sequence` of its read. */
export interface ReadMark {
  rolloutId: string;
  /** Highest `sequence` among the events read (0 when it had none). */
  readUpTo: number;
}

/** What {@link LateRewardWatch.check} found. */
export interface LateRewards {
  /** Reward events stored after their rollout was read. */
  count: number;
  /** The rollouts they belong to, each once, in watch order. */
  rolloutIds: string[];
}

/** Remembers which rollouts were read up to which event, and later counts the rewards that came after. */
export class LateRewardWatch {
  private marks: ReadMark[] = [];

  /** Adds rollouts just read (their rewards after `readUpTo` are counted by the next {@link check}). */
  watch(marks: readonly ReadMark[]): void {
    this.marks.push(...marks);
  }

  /**
   * Reads the reward events of every watched rollout and counts those past its mark; then forgets them all.
   * @param client - gateway client
   * @returns the count and the rollouts concerned
   */
  async check(client: GatewayClient): Promise<LateRewards> {
    const marks = this.marks;
    this.marks = [];
    const found: LateRewards = { count: 0, rolloutIds: [] };
    for (const { rolloutId, readUpTo } of marks) {
      const rewards = await client.getEvents(rolloutId, { eventType: "reward" });
      const after = rewards.filter((event) => event.sequence > readUpTo).length;
      if (after === 0) continue;
      found.count += after;
      found.rolloutIds.push(rolloutId);
    }
    return found;
  }
}
