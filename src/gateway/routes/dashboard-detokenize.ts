/**
 * @module `POST /api/dashboard/detokenize` `{model, ids}` (and `GET …?model=M&ids=1,2,3` for a few ids): the text of
 * each token id, decoded through a server registered for the model (see `dashboard/detokenizer.ts`), for the trace
 * viewer's prompt tokens. The full 4,096 ids fit only in a body: as a query they can pass Node's 16 KiB header limit.
 */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { parseOrThrow } from "../../protocol/index.js";
import { type Detokenizer, MAX_DETOKENIZE_IDS } from "../dashboard/detokenizer.js";

/** Options of {@link dashboardDetokenizeRoutes}. */
export interface DashboardDetokenizeRouteOptions {
  detokenizer: Detokenizer;
}

const QuerySchema = z.object({
  model: z.string().min(1).max(200),
  ids: z
    .string()
    .regex(/^\d+(,\d+)*$/, "comma-separated non-negative integer token ids")
    .transform((text) => text.split(",").map(Number))
    .refine((ids) => ids.length <= MAX_DETOKENIZE_IDS, `at most ${MAX_DETOKENIZE_IDS} ids`),
});

const BodySchema = z.strictObject({
  model: z.string().min(1).max(200),
  ids: z.array(z.number().int().min(0)).max(MAX_DETOKENIZE_IDS, `at most ${MAX_DETOKENIZE_IDS} ids`),
});

/** Mounts `POST` and `GET /api/dashboard/detokenize`. */
export const dashboardDetokenizeRoutes: FastifyPluginAsync<DashboardDetokenizeRouteOptions> = async (
  app,
  { detokenizer },
) => {
  app.get("/api/dashboard/detokenize", async (request) => {
    const { model, ids } = parseOrThrow(QuerySchema, request.query, "detokenize", ["query"]);
    return { texts: await detokenizer.texts(model, ids) };
  });
  app.post("/api/dashboard/detokenize", async (request) => {
    const { model, ids } = parseOrThrow(BodySchema, request.body, "detokenize", ["body"]);
    return { texts: await detokenizer.texts(model, ids) };
  });
};
