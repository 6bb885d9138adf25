/** @module Helpers shared by the store contract's case files: a per-test context and input builders. */
import {
  type EventCreateInput,
  EventCreateSchema,
  type Rollout,
  type RolloutCreateInput,
  RolloutCreateSchema,
} from "../../protocol/index.js";
import type { Store } from "../store.js";

/** What each contract case file gets from `runStoreContract`. */
export interface ContractContext {
  /** A fresh empty store, closed after the test. */
  fresh(): Promise<Store>;
  /** Registers a case (`it`), or skips it with the store's stated reason. */
  test(caseName: string, fn: () => Promise<void>): void;
}

/** Parses creates as the gateway would (defaults applied). */
export function creates(...inputs: RolloutCreateInput[]) {
  return inputs.map((i) => RolloutCreateSchema.parse(i));
}

/** Parses event creates as the gateway would. */
export function events(...inputs: EventCreateInput[]) {
  return inputs.map((i) => EventCreateSchema.parse(i));
}

/** A model_request-like event payload; `data.request.i` tells events apart. */
export function modelRequest(i: number): EventCreateInput {
  return { event_type: "model_request", data: { model: "m", model_version: 0, request: { i }, status: "ok" } };
}

/** Creates one rollout and moves it to running. */
export async function running(store: Store, create: RolloutCreateInput = { input: {} }): Promise<Rollout> {
  const [r] = await store.createRollouts(creates(create));
  return store.patchRollout(r!.rollout_id, { status: { state: "running" } });
}
