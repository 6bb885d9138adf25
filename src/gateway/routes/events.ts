/**
 * @module Event routes (Agent Lightning v1.0 + list posts and `event_id` idempotency): append events to an attempt of
 * a rollout (late ones counted), read the events of its current attempt, raw or in triplet format.
 */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import {
  currentAttemptOf,
  type EventCreate,
  EventCreateSchema,
  parseOrThrow,
  RewardDataSchema,
  RolloutNotFound,
  TRIPLET_DEDUPE_RULES,
  toTripletEvents,
} from "../../protocol/index.js";
import type { GatewayRouteOptions } from "../route-options.js";

const EventListQuerySchema = z.object({
  event_type: z.string().min(1).optional(),
  format: z.enum(["raw", "triplet"]).optional(),
  dedupe: z.enum(TRIPLET_DEDUPE_RULES).optional(),
  attempt_id: z.string().min(1).optional(),
});

/**
 * Parses an events POST body: one EventCreate or a list. Reward events must carry a finite numeric `value`.
 * @returns the creates, and whether the caller sent a list (the answer mirrors it)
 * @throws {ValidationFailed} with `loc` like `["body", 1, "data", "value"]`
 */
export function parseEventBody(body: unknown): { creates: EventCreate[]; isList: boolean } {
  const isList = Array.isArray(body);
  const items: unknown[] = isList ? body : [body];
  const creates = items.map((item, index) => {
    const loc = isList ? ["body", index] : ["body"];
    const create = parseOrThrow(EventCreateSchema, item, "event", loc);
    if (create.event_type === "reward") parseOrThrow(RewardDataSchema, create.data, "reward event", [...loc, "data"]);
    return create;
  });
  return { creates, isList };
}

/** Path params of the event routes. */
interface EventParams {
  id: string;
  aid: string;
}

/**
 * Mounts `POST /api/rollouts/:id/attempt/:aid/events` (one event → the stored Event, a list → a list; 404 unknown
 * rollout, 409 superseded attempt; events after the rollout finished are stored `late` and counted) and `GET /api/rollouts/:id/events[?event_type=&format=triplet&dedupe=prompt|retries&attempt_id=]` (`dedupe`
 * defaults to the gateway's `triplet_dedupe`).
 */
export const eventRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app, { store, config, metrics }) => {
  app.post<{ Params: EventParams }>("/api/rollouts/:id/attempt/:aid/events", async (request) => {
    const { creates, isList } = parseEventBody(request.body);
    const events = await store.appendEvents(request.params.id, request.params.aid, creates);
    const late = events.reduce((n, e) => n + (e.late ? 1 : 0), 0);
    if (late > 0) {
      metrics.lateEvents.inc(late);
      request.log.info({ attemptId: request.params.aid, late }, "stored late events");
    }
    request.log.debug({ attemptId: request.params.aid, count: events.length }, "appended events");
    return isList ? events : events[0];
  });

  app.get<{ Params: Pick<EventParams, "id"> }>("/api/rollouts/:id/events", async (request) => {
    const query = parseOrThrow(EventListQuerySchema, request.query, "event list", ["query"]);
    const rolloutId = request.params.id;
    const rollout = await store.getRollout(rolloutId);
    if (!rollout) throw new RolloutNotFound(rolloutId);
    // As AGL reads it: the rollout's current attempt (`last_attempt_id`, "0" while null), not the newest attempt
    // with events (an event to a foreign attempt id does not change which attempt is read).
    const attemptId = query.attempt_id ?? currentAttemptOf(rollout.status);
    const events = await store.listEvents(rolloutId, { attemptId, eventType: query.event_type });
    if (query.format !== "triplet") return events;
    return toTripletEvents(events, query.dedupe ?? config.triplet_dedupe);
  });
};
