/** @module `POST /api/leases`: a controller renews the leases of the attempts it runs (see `rollout-leases.ts`). */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { currentAttemptOf, parseOrThrow } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import type { RolloutLeases } from "../rollout-leases.js";

/** Body of `POST /api/leases`. */
export const LeaseRequestSchema = z.strictObject({
  ttl_seconds: z.number().gt(0).max(86_400).describe("the leases end this many seconds from now unless renewed"),
  leases: z
    .array(z.strictObject({ rollout_id: z.string().min(1), attempt_id: z.string().min(1) }))
    .max(10_000)
    .describe("the attempts the caller runs"),
});

/** Options of {@link leaseRoutes}. */
export interface LeaseRoutesOptions {
  store: Store;
  leases: RolloutLeases;
}

/**
 * Mounts `POST /api/leases` `{ttl_seconds, leases: [{rollout_id, attempt_id}]}` → `{renewed: [ids], rejected: [ids]}`.
 * A lease is renewed only for a rollout that is `running` on that attempt; the others are listed in `rejected` (the
 * caller should stop their agents).
 * @throws {ValidationFailed} a malformed body (422)
 */
export const leaseRoutes: FastifyPluginAsync<LeaseRoutesOptions> = async (app, { store, leases }) => {
  app.post("/api/leases", async (request) => {
    const body = parseOrThrow(LeaseRequestSchema, request.body, "lease request", ["body"]);
    const renewed: string[] = [];
    const rejected: string[] = [];
    for (const { rollout_id, attempt_id } of body.leases) {
      const rollout = await store.getRollout(rollout_id);
      const current = rollout?.status.state === "running" && currentAttemptOf(rollout.status) === attempt_id;
      if (!current) {
        rejected.push(rollout_id);
        continue;
      }
      leases.renew(rollout_id, attempt_id, body.ttl_seconds * 1000);
      renewed.push(rollout_id);
    }
    return { renewed, rejected };
  });
};
