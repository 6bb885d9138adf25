/** @module Which agents a setting applies to: exact names or `/regex/` patterns (AGL's `agent_match` is a regex). */

/** True when a call of the named agent (undefined: the call names none) passes. */
export type AgentFilter = (agentName: string | undefined) => boolean;

/** A `/regex/` entry: the pattern between the slashes. */
const REGEX_ENTRY = /^\/(.+)\/$/;

/**
 * A filter matching names exactly and `/regex/` entries by `RegExp.test`; a call naming no agent never matches.
 * @throws {SyntaxError} when a `/regex/` entry does not compile
 */
export function agentFilter(entries: readonly string[]): AgentFilter {
  const names = new Set<string>();
  const patterns: RegExp[] = [];
  for (const entry of entries) {
    const regex = REGEX_ENTRY.exec(entry);
    if (regex) patterns.push(new RegExp(regex[1] as string));
    else names.add(entry);
  }
  return (agentName) =>
    agentName !== undefined && (names.has(agentName) || patterns.some((pattern) => pattern.test(agentName)));
}

/** @returns the first `/regex/` entry that does not compile, or null */
export function invalidAgentEntry(entries: readonly string[]): string | null {
  for (const entry of entries) {
    const regex = REGEX_ENTRY.exec(entry);
    if (!regex) continue;
    try {
      new RegExp(regex[1] as string);
    } catch {
      return entry;
    }
  }
  return null;
}
