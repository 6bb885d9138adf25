/**
 * @module Admin routes of the engine server.
 * - `POST /v1/load_weights {path}`: hot swap to a checkpoint directory (written by `Engine.saveCheckpoint`) inside the
 *   checkpoint root. New requests are held, in-flight ones finish on the old weights, the engine loads, requests
 *   resume. Answers `{status: "ok", policy_version}` with the bumped version; a path outside the root (symlinks
 *   resolved) is a 403 that says nothing about what is there; a missing directory inside it is a 404; a file, a
 *   directory that is not a checkpoint, an invalid `config.json`, bad weights or a checkpoint of another model shape
 *   are a 400 whose detail never quotes the files, and the engine keeps serving its old weights.
 * - `POST /pause`: new generation requests wait (they are not refused) until `POST /resume`; in-flight ones finish.
 *   Answers `{status: "paused", in_flight}`. `POST /resume` answers `{status: "running"}`.
 */
import { statSync } from "node:fs";
import type { FastifyPluginAsync } from "fastify";
import { BadRequest, NotFound } from "../../../protocol/errors.js";
import { CheckpointInvalid } from "../../checkpoint-error.js";
import { resolveCheckpointPath } from "../checkpoint-root.js";
import { POLICY_VERSION_HEADER, type ServerContext } from "../context.js";
import { loadWeightsRequestSchema, parseBody } from "../request-schemas.js";

/**
 * Resolves `path` inside the checkpoint root and checks that it is a directory before the engine is asked to load it.
 * @returns the real path to load
 * @throws {CheckpointOutsideRoot} outside the root or no root (403)
 * @throws {NotFound} when nothing exists at `path` (inside the root)
 * @throws {BadRequest} when `path` is not a directory
 */
function checkCheckpointPath(root: ServerContext["checkpointRoot"], path: string): string {
  const real = resolveCheckpointPath(root, path);
  const stat = statSync(real, { throwIfNoEntry: false });
  if (!stat) throw new NotFound(`Checkpoint directory ${path} not found`);
  if (!stat.isDirectory())
    throw new BadRequest(`load_weights ${path}: not a directory (expected a checkpoint directory)`);
  return real;
}

/**
 * A load failure's reason without text quoted from the files: everything from the first `(` on is cut (a JSON parse
 * error in parentheses quotes what it read: `config.json is not JSON (Unexpected token …, "secret" is not valid JSON)`), and the
 * rest is capped at 300 characters.
 * @param reason - the engine's reason
 * @returns the reason to answer with; the whole one goes to the server's log
 */
export function reasonWithoutContent(reason: string): string {
  const open = reason.indexOf("(");
  const cut = (open >= 0 ? reason.slice(0, open) : reason).trim();
  return cut.length > 300 ? `${cut.slice(0, 300)}…` : cut;
}

/** Maps an engine's load failure to the caller's 4xx; anything else stays a 500. */
function loadError(path: string, err: unknown): unknown {
  if (err instanceof CheckpointInvalid)
    return err.kind === "missing"
      ? new NotFound(`Checkpoint directory ${path} not found`)
      : new BadRequest(`load_weights ${path}: ${reasonWithoutContent(err.reason)}`);
  // Engines other than the embedded one report a checkpoint of another model shape as a RangeError.
  if (err instanceof RangeError) return new BadRequest(`load_weights ${path}: ${reasonWithoutContent(err.message)}`);
  return err;
}

/** Route plugin of the admin routes. */
export function adminRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.post("/v1/load_weights", async (request, reply) => {
      const { path } = parseBody(loadWeightsRequestSchema, request.body, "load_weights request");
      const real = checkCheckpointPath(ctx.checkpointRoot, path);
      const policyVersion = await ctx.admission.exclusive(async () => {
        try {
          await ctx.engine.loadCheckpoint(real);
        } catch (err) {
          // The caller's mistake: the engine checked the whole checkpoint first, so it still serves the old weights.
          request.log.warn({ path, reason: (err as Error).message }, "load_weights refused");
          throw loadError(path, err);
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
