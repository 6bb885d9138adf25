/**
 * @module Agent tokens: an attempt-scoped credential given to agents as `AGL_KEY`, checked without stored state.
 * Form: `aglt1.<b64url(claims)>.<b64url(HMAC-SHA256(HMAC-SHA256(admin key, "arclight agent token v1"), signed part))>`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/** Prefix of every agent token: the gateway tells a token from the admin key by it. */
export const AGENT_TOKEN_PREFIX = "aglt1.";

/** Seconds a token outlives its attempt's timeout: the kill grace, a late reward post, clock skew. */
export const AGENT_TOKEN_SLACK_SECONDS = 600;

/** What a token allows its holder to touch. */
export const AgentTokenClaimsSchema = z.strictObject({
  /** The rollout the agent runs. */
  rollout_id: z.string().min(1),
  /** The attempt the agent runs: writes are checked against the rollout's current attempt. */
  attempt_id: z.string().min(1),
  /** The proxy mode of the rollout (`train` or `val`): the only mode its proxy calls may use. */
  mode: z.enum(["train", "val"]),
  /** Expiry, epoch seconds. */
  exp: z.number(),
});
/** The claims of an agent token. */
export type AgentTokenClaims = z.infer<typeof AgentTokenClaimsSchema>;

/** @returns the HMAC key tokens are signed with: derived, so the admin key itself never signs anything sent out */
function signingKey(adminKey: string): Buffer {
  return createHmac("sha256", adminKey).update("arclight agent token v1").digest();
}

function signature(adminKey: string, signedPart: string): Buffer {
  return createHmac("sha256", signingKey(adminKey)).update(signedPart).digest();
}

/** Mints a token for one attempt. @throws {RangeError} when `adminKey` is empty (an open gateway has no tokens) */
export function mintAgentToken(adminKey: string, claims: AgentTokenClaims): string {
  if (adminKey === "") throw new RangeError("cannot mint an agent token without an admin key");
  const payload = Buffer.from(JSON.stringify(AgentTokenClaimsSchema.parse(claims)), "utf8").toString("base64url");
  const signedPart = `${AGENT_TOKEN_PREFIX}${payload}`;
  return `${signedPart}.${signature(adminKey, signedPart).toString("base64url")}`;
}

/** @returns true when `presented` has the agent-token form (it may still be forged or expired) */
export function isAgentToken(presented: string): boolean {
  return presented.startsWith(AGENT_TOKEN_PREFIX);
}

/** Why {@link verifyAgentToken} refused a token. */
export type AgentTokenRefusal = "malformed" | "bad_signature" | "expired";

/** Checks a token's signature (constant-time) and expiry; returns the claims or why it is refused. */
export function verifyAgentToken(
  adminKey: string,
  token: string,
  nowSeconds: number,
): { claims: AgentTokenClaims } | { refused: AgentTokenRefusal } {
  if (adminKey === "") return { refused: "malformed" };
  return verifyWith(signingKey(adminKey), token, nowSeconds);
}

/** {@link verifyAgentToken} with the signing key already derived. */
function verifyWith(
  key: Buffer,
  token: string,
  nowSeconds: number,
): { claims: AgentTokenClaims } | { refused: AgentTokenRefusal } {
  if (!isAgentToken(token)) return { refused: "malformed" };
  const dot = token.lastIndexOf(".");
  const signedPart = token.slice(0, dot);
  if (dot <= AGENT_TOKEN_PREFIX.length) return { refused: "malformed" };
  // The signature's text must be exactly the canonical base64url of the HMAC: Node's base64url decoding skips
  // characters outside the alphabet and ignores trailing bits, so comparing decoded bytes let altered texts through.
  const given = Buffer.from(token.slice(dot + 1), "latin1");
  const expected = Buffer.from(createHmac("sha256", key).update(signedPart).digest("base64url"), "latin1");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { refused: "bad_signature" };
  let claims: AgentTokenClaims;
  try {
    const json = Buffer.from(signedPart.slice(AGENT_TOKEN_PREFIX.length), "base64url").toString("utf8");
    claims = Object.freeze(AgentTokenClaimsSchema.parse(JSON.parse(json)));
  } catch {
    return { refused: "malformed" };
  }
  return claims.exp > nowSeconds ? { claims } : { refused: "expired" };
}

/** Past this many remembered tokens the verifier starts over (one per attempt: a long run would otherwise grow it). */
const MAX_REMEMBERED_TOKENS = 10_000;

/**
 * Verifies tokens under one admin key, remembering good ones by their whole text (signature included, so a forged
 * token is never a hit) to skip the HMACs on an agent's repeated calls. Expiry is checked on every call.
 */
export class AgentTokenVerifier {
  private readonly key: Buffer;
  private readonly good = new Map<string, AgentTokenClaims>();

  /** @throws {RangeError} when `adminKey` is empty */
  constructor(adminKey: string) {
    if (adminKey === "") throw new RangeError("cannot verify agent tokens without an admin key");
    this.key = signingKey(adminKey);
  }

  /** The claims (frozen), or the reason the token is refused. */
  verify(token: string, nowSeconds: number): { claims: AgentTokenClaims } | { refused: AgentTokenRefusal } {
    const known = this.good.get(token);
    if (known !== undefined) return known.exp > nowSeconds ? { claims: known } : { refused: "expired" };
    const verdict = verifyWith(this.key, token, nowSeconds);
    if ("claims" in verdict) {
      if (this.good.size >= MAX_REMEMBERED_TOKENS) this.good.clear();
      this.good.set(token, verdict.claims);
    }
    return verdict;
  }
}

/** Expiry, epoch seconds, of a token for an attempt killed after `timeoutSeconds`. */
export function agentTokenExpiry(timeoutSeconds: number, nowSeconds: number): number {
  return Math.ceil(nowSeconds + timeoutSeconds + AGENT_TOKEN_SLACK_SECONDS);
}
