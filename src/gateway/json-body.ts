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
 * A JSON parser: the value of a JSON text.
 * @throws the parser's error for invalid JSON or a poisoned prototype
 */
type JsonParse = (text: string) => unknown;

/**
 * Fastify's own JSON parser as a {@link JsonParse}: prototype-poisoning-safe, with Fastify's errors. A `__proto__` key
 * is valid JSON, so it is accepted and left out of the value (secure-json-parse's `remove`), never set as a prototype;
 * `constructor` keys stay as data (they only harm code that deep-merges, which the gateway does not). The proxy
 * forwards the agent's text unchanged.
 * @param app - any Fastify instance
 * @throws {Error} from the returned parser, should Fastify's parser ever stop answering synchronously
 */
function fastifyJsonParse(app: FastifyInstance): JsonParse {
  const parser = app.getDefaultJsonParser("remove", "ignore");
  return (text) => {
    let answered = false;
    let error: Error | null = null;
    let value: unknown;
    parser(undefined as never, text, (err, parsed) => {
      answered = true;
      error = err;
      value = parsed;
    });
    if (!answered) throw new Error("Fastify's JSON parser did not answer synchronously");
    if (error) throw error;
    return value;
  };
}

/**
 * A JSON body's text and value; undefined for an empty (or whitespace) body.
 * @throws {BadRequest} invalid JSON, or nesting deeper than {@link MAX_JSON_DEPTH} levels (checked before parsing)
 */
function parseJsonText(parse: JsonParse, raw: string): JsonBodyText | undefined {
  // A leading byte order mark is not JSON (RFC 8259 §8.1 lets a reader ignore it); the text kept is without it.
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.trim() === "") return undefined;
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH))
    throw new BadRequest(`JSON body nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return { text, value: parse(text) };
  } catch (err) {
    throw new BadRequest(`Invalid JSON body: ${(err as Error).message}`);
  }
}

/**
 * Replaces the `application/json` parser of `app` (and the plugins below it) with {@link parseJsonText}'s rules: an
 * empty body counts as no body, and a body nested deeper than {@link MAX_JSON_DEPTH} levels is refused (400) before
 * parsing, so nothing stores a value that `JSON.stringify` cannot walk.
 * @param app - the Fastify instance or plugin scope
 * @param keepText - true: `request.body` is a {@link JsonBodyText}; false: the parsed value
 * @throws {BadRequest} (through Fastify, as 400) for invalid JSON or too deep a nesting
 */
export function installJsonParser(app: FastifyInstance, keepText = false): void {
  const parse = fastifyJsonParse(app);
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    try {
      const parsed = parseJsonText(parse, body as string);
      done(null, keepText ? parsed : parsed?.value);
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
