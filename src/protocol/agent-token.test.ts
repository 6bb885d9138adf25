import { describe, expect, it } from "vitest";
import { AgentTokenVerifier, mintAgentToken, verifyAgentToken } from "./agent-token.js";

const KEY = "admin-key";
const NOW = 1_800_000_000;
const claims = { rollout_id: "ro-1", attempt_id: "0", mode: "train" as const, exp: NOW + 60 };

describe("AgentTokenVerifier", () => {
  it("answers a remembered token as verifyAgentToken does, with the same claims", () => {
    const token = mintAgentToken(KEY, claims);
    const verifier = new AgentTokenVerifier(KEY);
    const first = verifier.verify(token, NOW);
    expect(first).toEqual(verifyAgentToken(KEY, token, NOW));
    expect(first).toEqual({ claims });
    const second = verifier.verify(token, NOW + 1);
    expect(second).toEqual({ claims });
    expect("claims" in second && "claims" in first && second.claims === first.claims).toBe(true);
  });

  it("refuses a remembered token once it has expired", () => {
    const token = mintAgentToken(KEY, claims);
    const verifier = new AgentTokenVerifier(KEY);
    expect(verifier.verify(token, NOW)).toEqual({ claims });
    expect(verifier.verify(token, claims.exp)).toEqual({ refused: "expired" });
    expect(verifier.verify(token, claims.exp + 1)).toEqual({ refused: "expired" });
  });

  it("never takes a token that differs from a remembered one, in its claims or its signature", () => {
    const token = mintAgentToken(KEY, claims);
    const verifier = new AgentTokenVerifier(KEY);
    expect(verifier.verify(token, NOW)).toEqual({ claims });
    const [prefix, , signature] = token.split(".");
    const otherClaims = Buffer.from(JSON.stringify({ ...claims, rollout_id: "ro-2" })).toString("base64url");
    expect(verifier.verify(`${prefix}.${otherClaims}.${signature}`, NOW)).toEqual({ refused: "bad_signature" });
    const last = signature!.at(-2) === "A" ? "B" : "A";
    const alteredSignature = `${token.slice(0, -2)}${last}${token.at(-1)}`;
    expect(verifier.verify(alteredSignature, NOW)).toEqual({ refused: "bad_signature" });
    expect(verifier.verify(mintAgentToken("other-key", claims), NOW)).toEqual({ refused: "bad_signature" });
    expect(verifier.verify("aglt1.", NOW)).toEqual({ refused: "malformed" });
    expect(verifier.verify(KEY, NOW)).toEqual({ refused: "malformed" });
    // A refusal is not remembered: the good token still verifies, the bad ones still fail.
    expect(verifier.verify(token, NOW)).toEqual({ claims });
    expect(verifier.verify(`${prefix}.${otherClaims}.${signature}`, NOW)).toEqual({ refused: "bad_signature" });
  });

  it("refuses every text but the token's own: characters added, inserted or swapped for ones that decode alike", () => {
    const token = mintAgentToken(KEY, claims);
    const verifier = new AgentTokenVerifier(KEY);
    expect(verifier.verify(token, NOW)).toEqual({ claims });
    const signature = token.slice(token.lastIndexOf(".") + 1);
    const head = token.slice(0, token.lastIndexOf(".") + 1);
    // 32 bytes are 43 base64url characters, the last carrying 4 bits: its 3 neighbours in the alphabet decode alike.
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(signature.at(-1)!);
    const sameBytes = [0, 1, 2, 3].map((k) => alphabet[(last & ~3) + k]!).filter((c) => c !== signature.at(-1));
    const altered = [
      `${token}!`,
      `${token}=`,
      `${head}${signature.slice(0, 10)}!${signature.slice(10)}`,
      ...sameBytes.map((c) => `${head}${signature.slice(0, -1)}${c}`),
    ];
    for (const text of altered) {
      expect(verifier.verify(text, NOW), text).toEqual({ refused: "bad_signature" });
      expect(verifyAgentToken(KEY, text, NOW), text).toEqual({ refused: "bad_signature" });
    }
    expect(verifier.verify(token, NOW)).toEqual({ claims });
  });

  it("stays right past the number of tokens it remembers", () => {
    const verifier = new AgentTokenVerifier(KEY);
    const tokens = Array.from({ length: 10_050 }, (_, i) => mintAgentToken(KEY, { ...claims, rollout_id: `ro-${i}` }));
    for (const token of tokens) expect("claims" in verifier.verify(token, NOW)).toBe(true);
    expect(verifier.verify(tokens[0]!, NOW)).toEqual({ claims: { ...claims, rollout_id: "ro-0" } });
    expect(verifier.verify(tokens[10_049]!, claims.exp)).toEqual({ refused: "expired" });
  });

  it("needs an admin key", () => {
    expect(() => new AgentTokenVerifier("")).toThrow(RangeError);
  });
});
