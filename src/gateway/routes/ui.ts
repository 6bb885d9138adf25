/**
 * @module The dashboard's pages and login: `GET /ui/...` serves the built browser app (no data in it), `POST /ui/login`
 * trades a key for a session cookie (httpOnly, SameSite=Strict; 10 wrong keys a minute per address, then 429),
 * `POST /ui/logout` ends it, `GET /ui/session` says
 * whether the browser is logged in. Data is read from `/api/...` with the cookie.
 */
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { z } from "zod";
import { NotFound, parseOrThrow, Unauthorized } from "../../protocol/index.js";
import { LoginThrottle } from "../dashboard/login-throttle.js";
import { type DashboardSessions, SESSION_COOKIE } from "../dashboard/sessions.js";
import type { UiAsset } from "../dashboard/ui-assets.js";

/** Options of {@link uiRoutes}. */
export interface UiRouteOptions {
  sessions: DashboardSessions;
  /** Built files keyed by path below `/ui/`; see `loadUiAssets`. */
  assets: ReadonlyMap<string, UiAsset>;
}

const LoginSchema = z.strictObject({ key: z.string().min(1).max(4096) });

/** `Set-Cookie` value of a session (`Max-Age=0` clears it). */
function sessionCookie(token: string, maxAgeS: number): string {
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeS}`;
}

/** Sends one built file. */
function sendAsset(reply: FastifyReply, asset: UiAsset): FastifyReply {
  reply.header("content-type", asset.contentType);
  reply.header("cache-control", asset.immutable ? "public, max-age=31536000, immutable" : "no-cache");
  reply.header("x-content-type-options", "nosniff");
  return reply.send(asset.body);
}

/** Mounts `/ui`, `/ui/*`, `/ui/login`, `/ui/logout`, `/ui/session`. */
export const uiRoutes: FastifyPluginAsync<UiRouteOptions> = async (app, { sessions, assets }) => {
  const throttle = new LoginThrottle();
  app.post("/ui/login", async (request, reply) => {
    throttle.check(request.ip);
    const { key } = parseOrThrow(LoginSchema, request.body, "login", ["body"]);
    const token = sessions.login(key);
    if (token === undefined) {
      throttle.recordFailure(request.ip);
      request.log.warn({ ip: request.ip }, "dashboard login refused");
      throw new Unauthorized("Wrong key");
    }
    request.log.info("dashboard login");
    return reply.header("set-cookie", sessionCookie(token, sessions.maxAgeS)).status(204).send();
  });

  app.post("/ui/logout", async (request, reply) => {
    sessions.logout(request.headers.cookie);
    return reply.header("set-cookie", sessionCookie("", 0)).status(204).send();
  });

  app.get("/ui/session", async (request) => ({
    open: sessions.open,
    authenticated: sessions.open || sessions.isValid(request.headers.cookie),
  }));

  app.get("/ui", async (_request, reply) => reply.redirect("/ui/"));

  app.get<{ Params: { "*": string } }>("/ui/*", async (request, reply) => {
    const path = request.params["*"];
    const asset = assets.get(path === "" ? "index.html" : path);
    if (asset) return sendAsset(reply, asset);
    if (assets.size === 0) throw new NotFound("Dashboard not built: run `npm run build` (vite writes dist/ui)");
    throw new NotFound(`Route GET /ui/${path} not found`);
  });
};
