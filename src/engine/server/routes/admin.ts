/**
 * @module Admin routes of the engine server.
 * - `POST /v1/load_weights {path}`: hot swap to a checkpoint directory (written by `Engine.saveCheckpoint`). New
 *   requests are held, in-flight ones finish on the old weights, the engine loads, requests resume. Answers
 *   `{status: "ok", policy_version}` with the bumped version; a missing directory is a 404, a checkpoint of another
 *   model shape a 400.
 * - `POST /pause`: new generation requests wait (they are not refused) until `POST /resume`; in-flight ones finish.
 *   Answers `{status: "paused", in_flight}`. `POST /resume` answers `{status: "running"}`.
 */
import { existsSync } from "node:fs";
import type { FastifyPluginAsync } from "fastify";
import { BadRequest, NotFound } from "../../../protocol/errors.js";
import { POLICY_VERSION_HEADER, type ServerContext } from "../context.js";
import { loadWeightsRequestSchema, parseBody } from "../request-schemas.js";

/** Route plugin of the admin routes. */
export function adminRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.post("/v1/load_weights", async (request, reply) => {
      const { path } = parseBody(loadWeightsRequestSchema, request.body, "load_weights request");
      if (!existsSync(path)) throw new NotFound(`Checkpoint directory ${path} not found`);
      const policyVersion = await ctx.admission.exclusive(async () => {
        try {
          await ctx.engine.loadCheckpoint(path);
        } catch (err) {
          // A checkpoint of another model shape, or with missing weights: the caller's mistake, weights unchanged.
          if (err instanceof RangeError) throw new BadRequest(`load_weights ${path}: ${err.message}`);
          throw err;
        }
        return ctx.engine.policyVersion;
      });
      request.log.info({ path, policyVersion }, "loaded weights");
      void reply.header(POLICY_VERSION_HEADER, String(policyVersion));
      return { status: "ok", policy_version: policyVersion };
    });
    app.post("/pause", async (request) => {
      ctx.admission.pause();
      request.log.info({ inFlight: ctx.admission.inFlightCount }, "paused generation");
      return { status: "paused", in_flight: ctx.admission.inFlightCount };
    });
    app.post("/resume", async (request) => {
      ctx.admission.resume();
      request.log.info("resumed generation");
      return { status: "running" };
    });
  };
}
