/** @module Model endpoint routes: register (upsert by model + endpoint), list and remove the servers of a model. */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { BadRequest, endpointUrlProblem, type Model, ModelSchema, parseOrThrow } from "../../protocol/index.js";
import { readTokenizerFolder } from "../../wire/tokenizer-folder.js";
import { checkServedTokenizer } from "../proxy/tito/tokenizer-probe.js";
import type { GatewayRouteOptions } from "../route-options.js";

const ModelListSchema = z.array(ModelSchema);
const ModelQuerySchema = z.object({ model: z.string().min(1).optional() });

/**
 * Checks the `tito` endpoints of a registration: each names a tokenizer folder the gateway can read, with a chat
 * template, that tokenizes as the model server does where the server answers `/tokenize`, and every endpoint of one
 * model in the list has the same mode.
 * @throws {BadRequest} naming the model and what is missing or different
 */
async function checkTitoModels(models: readonly Model[]): Promise<void> {
  const modes = new Map<string, string>();
  const probes: Promise<void>[] = [];
  for (const m of models) {
    const mode = m.mode ?? "passthrough";
    if ((modes.get(m.model) ?? mode) !== mode) {
      throw new BadRequest(
        `model ${m.model}: every endpoint of a model needs the same mode (got passthrough and tito)`,
      );
    }
    modes.set(m.model, mode);
    if (mode !== "tito") continue;
    if (m.tokenizer === undefined) {
      throw new BadRequest(
        `model ${m.model}: mode tito needs \`tokenizer\`, a folder with tokenizer.json and tokenizer_config.json`,
      );
    }
    probes.push(checkServedTokenizer(m.model, m.endpoint, readTokenizerFolder(m.tokenizer)));
  }
  await Promise.all(probes);
}

/**
 * Mounts `POST /api/models` (list of Model → 201 list, upsert by (model, endpoint); a `tito` endpoint without a
 * readable tokenizer folder and chat template, or whose folder tokenizes otherwise than its server, is refused with 400,
 * and so is an endpoint that is not
 * `http(s)://host[:port]/path`), `GET /api/models[?model=]`
 * (beyond AGL) and `DELETE /api/models[?model=]` → `{"status":"ok"}`.
 */
export const modelRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app, { store }) => {
  app.post("/api/models", async (request, reply) => {
    const models = parseOrThrow(ModelListSchema, request.body, "models", ["body"]);
    models.forEach((model, index) => {
      const problem = endpointUrlProblem(model.endpoint);
      if (problem !== undefined) {
        throw new BadRequest(`body[${index}].endpoint ${JSON.stringify(model.endpoint)}: ${problem}`);
      }
    });
    await checkTitoModels(models);
    const stored = await store.upsertModels(models);
    request.log.info({ count: stored.length }, "registered model endpoints");
    return reply.status(201).send(stored);
  });

  app.get("/api/models", async (request) => {
    const { model } = parseOrThrow(ModelQuerySchema, request.query, "models query", ["query"]);
    return store.listModels(model);
  });

  app.delete("/api/models", async (request) => {
    const { model } = parseOrThrow(ModelQuerySchema, request.query, "models query", ["query"]);
    const removed = await store.deleteModels(model);
    request.log.info({ removed, model }, "removed model endpoints");
    return { status: "ok" };
  });
};
