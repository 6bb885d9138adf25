/**
 * @module The SQL team as a LangGraph.js graph: the writer drafts a query, it runs on the question's SQLite database,
 * the checker judges query and result, and while it says incorrect (at most `maxTurns` rewrites) the rewriter writes
 * a new query, which runs and goes back to the checker. Each role is a `ChatOpenAI` client on its own base URL
 * (`…/agent/{role}/openai/v1`), which is how the gateway records which agent made each call and routes a frozen
 * agent's calls to its own model. Nothing here knows about training.
 * @see https://langchain-ai.github.io/langgraphjs/ (StateGraph, Annotation)
 */
import { HumanMessage } from "@langchain/core/messages";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { executeQuery, type QueryResult } from "./execute.js";
import { checkerPrompt, extractSql, formatResult, parseVerdict, rewriterPrompt, writerPrompt } from "./prompts.js";

/** The three roles, in call order; each is an agent name on the gateway. */
export const ROLES = ["writer", "checker", "rewriter"] as const;
/** One role of the team. */
export type Role = (typeof ROLES)[number];

/** One model call of a run: which role, its response id (for a reward naming it) and its text. */
export interface CallRecord {
  role: Role;
  id: string;
  text: string;
}

/** The graph's state. `calls` accumulates; every other key holds the latest value. */
const SqlState = Annotation.Root({
  question: Annotation<string>,
  schema: Annotation<string>,
  dbPath: Annotation<string>,
  query: Annotation<string>,
  execution: Annotation<string>,
  feedback: Annotation<string>,
  verdict: Annotation<"correct" | "incorrect" | "unclear">,
  rewrites: Annotation<number>,
  calls: Annotation<CallRecord[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});
type State = typeof SqlState.State;

/** How the team reaches its model. */
export interface TeamOptions {
  /** The rollout's OpenAI base URL (`AGL_OPENAI_BASE_URL`, `…/openai/v1`). */
  baseUrl: string;
  apiKey: string;
  /** Tokens per reply. */
  maxTokens: number;
  /** Rewrites after the first draft at most. */
  maxTurns: number;
  /** Per-query execution limit. */
  queryTimeoutMs: number;
  /** Runs a query; default {@link executeQuery}. The agent passes one that records each execution as a tool span. */
  execute?: (dbPath: string, sql: string, timeoutMs: number) => Promise<QueryResult>;
}

/** What one run produced: the final query, the checker's last verdict, rewrites made and every call. */
export interface TeamRun {
  query: string;
  draft: string;
  verdict: "correct" | "incorrect" | "unclear";
  rewrites: number;
  calls: CallRecord[];
}

/**
 * The base URL of one role: the rollout's proxy URL with the agent segment before `/openai/v1`.
 * @param baseUrl - `…/mode/{mode}/openai/v1`
 * @param role - the agent name
 * @returns `…/mode/{mode}/agent/{role}/openai/v1`
 */
export function roleBaseUrl(baseUrl: string, role: Role): string {
  return baseUrl.replace(/\/openai\/v1\/?$/, `/agent/${role}/openai/v1`);
}

function roleModels(options: TeamOptions): Record<Role, ChatOpenAI> {
  const model = (role: Role) =>
    new ChatOpenAI({
      model: "policy",
      apiKey: options.apiKey,
      maxTokens: options.maxTokens,
      maxRetries: 8, // a paused gateway answers 429 with Retry-After while the trainer updates the weights
      configuration: { baseURL: roleBaseUrl(options.baseUrl, role) },
    });
  return { writer: model("writer"), checker: model("checker"), rewriter: model("rewriter") };
}

async function ask(models: Record<Role, ChatOpenAI>, role: Role, prompt: string): Promise<CallRecord> {
  const reply = await models[role].invoke([new HumanMessage(prompt)]);
  const text = typeof reply.content === "string" ? reply.content : JSON.stringify(reply.content);
  return { role, id: reply.id ?? "", text };
}

/**
 * Builds the compiled graph for one set of options.
 * @param options - base URL, key, reply length, turn and time limits
 * @returns the LangGraph runnable (`invoke({question, schema, dbPath})`)
 */
export function buildTeamGraph(options: TeamOptions) {
  const models = roleModels(options);
  const writeQuery = async (s: State) => {
    const call = await ask(models, "writer", writerPrompt(s.schema, s.question));
    return { query: extractSql(call.text), calls: [call], rewrites: 0 };
  };
  const execute = options.execute ?? ((dbPath, sql, timeoutMs) => executeQuery(dbPath, sql, { timeoutMs }));
  const runQuery = async (s: State) => {
    const result = s.query === "" ? null : await execute(s.dbPath, s.query, options.queryTimeoutMs);
    return { execution: result === null ? "Error: the reply holds no SQL query" : formatResult(result) };
  };
  const checkQuery = async (s: State) => {
    const call = await ask(models, "checker", checkerPrompt(s.schema, s.question, s.query, s.execution));
    return { feedback: call.text, verdict: parseVerdict(call.text), calls: [call] };
  };
  const rewriteQuery = async (s: State) => {
    const prompt = rewriterPrompt(s.schema, s.question, s.query, s.execution, s.feedback);
    const call = await ask(models, "rewriter", prompt);
    // A reply without SQL keeps the previous query: the rewriter may only make things better or leave them.
    return { query: extractSql(call.text) || s.query, calls: [call], rewrites: s.rewrites + 1 };
  };
  const next = (s: State) => (s.verdict === "correct" || s.rewrites >= options.maxTurns ? END : "rewrite_query");
  return new StateGraph(SqlState)
    .addNode("write_query", writeQuery)
    .addNode("execute_query", runQuery)
    .addNode("check_query", checkQuery)
    .addNode("rewrite_query", rewriteQuery)
    .addEdge(START, "write_query")
    .addEdge("write_query", "execute_query")
    .addEdge("execute_query", "check_query")
    .addConditionalEdges("check_query", next, ["rewrite_query", END])
    .addEdge("rewrite_query", "execute_query")
    .compile();
}

/**
 * Runs the team once on one question.
 * @param input - the question, the schema text and the database file
 * @param options - see {@link TeamOptions}
 * @returns the final query, the draft, the last verdict, rewrites and calls
 */
export async function runTeam(
  input: { question: string; schema: string; dbPath: string },
  options: TeamOptions,
): Promise<TeamRun> {
  // Each turn is 3 node steps (rewrite, execute, check) after the first 3; LangGraph stops a graph at 25 by default.
  const state = await buildTeamGraph(options).invoke(input, { recursionLimit: 3 * options.maxTurns + 10 });
  const draft = extractSql(state.calls.find((c) => c.role === "writer")?.text ?? "");
  return { query: state.query, draft, verdict: state.verdict, rewrites: state.rewrites, calls: state.calls };
}
