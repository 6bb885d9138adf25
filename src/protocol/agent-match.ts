/**
 * @module Which agents a setting applies to (`trainer.agents.train` / `frozen`, gateway `agent_routes`, `arclight inspect --agent`):
 * entries are exact agent names or `/regex/` patterns, as Agent Lightning's `agent_match` is a regex.
 */

/** True when a call of the named agent (undefined: the call names none) passes. */
export type AgentFilter = (agentName: string | undefined) => boolean;

/** A `/regex/` entry: the pattern between the slashes. */
const REGEX_ENTRY = /^\/(.+)\/$/;

/**
 * Builds a filter from entries: a name `writer` matches that agent exactly; `/^rewrite/` matches every agent name the
 * regex finds a match in (JavaScript `RegExp.test`). A call naming no agent never matches.
 * @param entries - names and `/regex/` patterns; an empty list matches nothing
 * @returns the filter
 * @throws {SyntaxError} when a `/regex/` entry is not a valid regular expression
 * @see Agent Lightning `agent_match` (a regex on the agent name)
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

/**
 * Checks that every `/regex/` entry compiles (for a config refinement).
 * @param entries - names and `/regex/` patterns
 * @returns the first entry that does not compile, or null
 */
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
