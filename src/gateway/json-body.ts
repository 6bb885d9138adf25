/**
 * @module The gateway's JSON body parser: Fastify's prototype-poisoning-safe parser behind a nesting-depth check. The
 * proxy installs the variant that keeps the body's text too, so it can forward what the agent sent byte for byte.
 */
import type { FastifyInstance } from "fastify";
import { BadRequest } from "../protocol/index.js";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "./json-depth.js";

/** A JSON body as received: its exact text and the parsed value. */
export interface JsonBodyText {
  text: string;
  value: unknown;
}

/**
 * Replaces the `application/json` parser of `app` (and the plugins below it). An empty body counts as no body. A body
 * nested deeper than {@link MAX_JSON_DEPTH} levels is refused (400) before parsing, so nothing stores a value that
 * `JSON.stringify` cannot walk.
 * @param app - the Fastify instance or plugin scope
 * @param keepText - true: `request.body` is a {@link JsonBodyText}; false: the parsed value
 * @throws {BadRequest} (through Fastify, as 400) for invalid JSON or too deep a nesting
 */
export function installJsonParser(app: FastifyInstance, keepText = false): void {
  const parseJson = app.getDefaultJsonParser("error", "ignore");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === "") return done(null, undefined);
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
      return done(new BadRequest(`JSON body nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    }
    parseJson(request, text, (err, value) => {
      if (err) done(new BadRequest(`Invalid JSON body: ${err.message}`), undefined);
      else done(null, keepText ? ({ text, value } satisfies JsonBodyText) : value);
    });
  });
}
