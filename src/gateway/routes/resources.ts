/**
 * @module Resource routes: `POST /api/resources/{name}` stores a new version, `GET /api/resources/{name}[?version=N]`
 * reads the latest (or version N), `GET /api/resources` lists the latest of each, and `GET /api/resources/latest`
 * answers with Agent Lightning v1.0's `ResourcesUpdate` snapshot.
 */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import {
  parseOrThrow,
  ResourceCreateSchema,
  ResourceNameSchema,
  ResourceNotFound,
  resourcesUpdateOf,
} from "../../protocol/index.js";
import type { GatewayRouteOptions } from "../route-options.js";

const NameParamsSchema = z.object({ name: ResourceNameSchema });
const VersionQuerySchema = z.object({ version: z.coerce.number().int().min(1).optional() });

/**
 * Mounts the resource routes. `latest` is a reserved name (the AGL snapshot route); posting to it is refused with 422.
 */
export const resourceRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app, { store }) => {
  app.get("/api/resources/latest", async () => resourcesUpdateOf(await store.listLatestResources()));

  app.get("/api/resources", async () => store.listLatestResources());

  app.post("/api/resources/:name", async (request, reply) => {
    const { name } = parseOrThrow(
      NameParamsSchema.refine((p) => p.name !== "latest", { message: "latest is reserved", path: ["name"] }),
      request.params,
      "resource name",
      ["path"],
    );
    const { value } = parseOrThrow(ResourceCreateSchema, request.body, "resource", ["body"]);
    const stored = await store.addResourceVersion(name, value);
    request.log.info({ name, version: stored.version }, "stored resource version");
    return reply.status(201).send(stored);
  });

  app.get("/api/resources/:name", async (request) => {
    const { name } = parseOrThrow(NameParamsSchema, request.params, "resource name", ["path"]);
    const { version } = parseOrThrow(VersionQuerySchema, request.query, "resource query", ["query"]);
    const found = await store.getResource(name, version);
    if (found === undefined) throw new ResourceNotFound(name, version);
    return found;
  });
};
