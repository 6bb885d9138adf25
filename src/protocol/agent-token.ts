/**
 * @module Agent tokens: the scoped credential a controller gives each agent process as `AGL_KEY` instead of the admin
 * key. A token names one rollout, one attempt and one proxy mode, carries an expiry, and is signed with HMAC-SHA256
 * under a key derived from the admin key, so the gateway checks it without any stored state and a controller that
 * holds the admin key mints it without a round trip.
 *
 * Wire form: `aglt1.<base64url(JSON claims)>.<base64url(HMAC-SHA256(signing key, "aglt1.<claims part>"))>`; the
 * signing key is `HMAC-SHA256(admin key, "arclight agent token v1")`. Every character is URL- and header-safe.
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

/**
 * Mints a token for one attempt.
 * @param adminKey - the gateway's admin key (non-empty)
 * @param claims - rollout id, attempt id, mode, expiry (epoch seconds)
 * @returns the token, to be given to the agent as `AGL_KEY`
 * @throws {RangeError} when `adminKey` is empty (an open gateway has no tokens: give agents no key)
 */
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

/**
 * Checks a token's signature and expiry (constant-time signature compare).
 * @param adminKey - the gateway's admin key
 * @param token - the presented token
 * @param nowSeconds - the current time, epoch seconds
 * @returns the claims, or the reason the token is refused
 */
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
 * Verifies agent tokens under one admin key, remembering the ones it found good: an agent presents the same token
 * on every call, and a remembered token costs one map lookup and the expiry check instead of two HMACs, base64 and
 * JSON decoding and the claims schema (bench/auth.ts prints both). Only a token whose signature checked out is
 * remembered, under its whole text (signature included), so a forged or altered token is never a hit; refusals are
 * not remembered. Expiry is checked on every call, hit or not.
 */
export class AgentTokenVerifier {
  private readonly key: Buffer;
  private readonly good = new Map<string, AgentTokenClaims>();

  /**
   * @param adminKey - the gateway's admin key
   * @throws {RangeError} when `adminKey` is empty (an open gateway has no tokens)
   */
  constructor(adminKey: string) {
    if (adminKey === "") throw new RangeError("cannot verify agent tokens without an admin key");
    this.key = signingKey(adminKey);
  }

  /**
   * Checks a token's signature (constant-time compare, first time only) and expiry (every time).
   * @param token - the presented token
   * @param nowSeconds - the current time, epoch seconds
   * @returns the claims (frozen), or the reason the token is refused
   */
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

/**
 * The expiry of a token for an attempt that a controller kills after `timeoutSeconds`.
 * @param timeoutSeconds - the rollout's `config.timeout_seconds`
 * @param nowSeconds - the current time, epoch seconds
 * @returns epoch seconds: now + timeout + {@link AGENT_TOKEN_SLACK_SECONDS}
 */
export function agentTokenExpiry(timeoutSeconds: number, nowSeconds: number): number {
  return Math.ceil(nowSeconds + timeoutSeconds + AGENT_TOKEN_SLACK_SECONDS);
}
