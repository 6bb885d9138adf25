/**
 * @module The sql-team rollout entry point: runs the writer → checker → rewriter graph (graph.ts) on one question,
 * scores the final query by execution accuracy against the gold query (reward.ts), and posts a `sql_team` event and
 * the reward. Run by the controller (`train.cpu.yaml`), or by hand with the `AGL_*` variables of a rollout.
 *
 * Usage: `node --import tsx recipes/sql_team/agent.ts SPIDER_DIR/tables.json` (the databases are read from
 * `SPIDER_DIR/database/<db_id>/<db_id>.sqlite`).
 * Environment: `SQL_DB_ID`, `SQL_QUESTION`, `SQL_GOLD` (the rollout input's `db_id`, `question`, `query`, through
 * the config's `env_map`); `SQL_MAX_TOKENS` (reply length, default 256), `SQL_MAX_TURNS` (rewrites, default 2);
 * `AGL_OPENAI_BASE_URL`, `AGL_KEY`, `AGL_EVENT_URL` (set by the controller).
 * Exit codes: 0 when the reward was posted; 1 on an error; 2 on a missing argument or variable.
 */
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { emitEvent, emitReward, fromEnv, span, toolCall } from "../../src/agent/index.js";
import { executeQuery, type QueryResult } from "./execute.js";
import { runTeam } from "./graph.js";
import { executionAccuracy } from "./reward.js";
import { databasePath, readTables, schemaText } from "./spider-data.js";

const QUERY_TIMEOUT_MS = 5000;

/** A query that failed; thrown inside its tool span so the span ends with status error. */
class QueryFailed extends Error {}

/**
 * Runs a query as an `execute_tool execute_sql` span (status error when the query fails), so the trainer's
 * `tool_status` rule can charge a failing query to the call that wrote it (docs/credit.md §4).
 */
async function tracedQuery(dbPath: string, sql: string, timeoutMs: number): Promise<QueryResult> {
  try {
    return await toolCall(
      "execute_sql",
      async (s) => {
        const result = await executeQuery(dbPath, sql, { timeoutMs });
        if (!result.ok) throw new QueryFailed(result.error);
        s.setAttribute("sql.rows", result.rows.length);
        return result;
      },
      { "sql.query": sql },
    );
  } catch (err) {
    if (err instanceof QueryFailed) return { ok: false, error: err.message };
    throw err;
  }
}

/** A whole-number variable, or its default; anything else names the variable. */
function intVar(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got "${text}"`);
  return value;
}

async function main(): Promise<void> {
  const tablesPath = process.argv[2];
  const { SQL_DB_ID: dbId, SQL_QUESTION: question, SQL_GOLD: gold } = process.env;
  if (!tablesPath || !dbId || !question || !gold) {
    console.error("sql-team: usage: agent.ts SPIDER_DIR/tables.json, with SQL_DB_ID, SQL_QUESTION and SQL_GOLD set");
    process.exit(2);
  }
  const env = fromEnv();
  const table = readTables(tablesPath).get(dbId);
  if (table === undefined) throw new Error(`db_id ${dbId} is not in ${tablesPath}`);
  const dbPath = databasePath(dirname(tablesPath), dbId);
  const options = {
    baseUrl: env.baseURL,
    apiKey: env.apiKey,
    maxTokens: intVar("SQL_MAX_TOKENS", 256),
    maxTurns: intVar("SQL_MAX_TURNS", 2),
    queryTimeoutMs: QUERY_TIMEOUT_MS,
    execute: tracedQuery,
  };
  const input = { question, schema: schemaText(table), dbPath };
  const run = await span("sql-team", () => runTeam(input, options), { "sql.db_id": dbId });
  const scored = await executionAccuracy(dbPath, run.query, gold, QUERY_TIMEOUT_MS);
  const draft = run.draft === run.query ? scored : await executionAccuracy(dbPath, run.draft, gold, QUERY_TIMEOUT_MS);
  await emitEvent(
    "sql_team",
    {
      db_id: dbId,
      query: run.query,
      draft_reward: draft.reward,
      verdict: run.verdict,
      rewrites: run.rewrites,
      calls: run.calls.map((c) => c.role),
    },
    { env },
  );
  await emitReward(scored.reward, { env, source: "execution_accuracy", reason: scored.reason });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err: unknown) => {
    console.error(`sql-team: ${(err as Error).message}`);
    process.exit(1);
  });
}
