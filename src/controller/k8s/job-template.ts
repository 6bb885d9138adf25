/**
 * @module Renders `config.k8s.job_template` (Jinja via nunjucks) into one Job, as AGL v1.0: variables `job_name` and
 * `input`, filter `yaml_escape`.
 */
import nunjucks from "nunjucks";
import { parseAllDocuments } from "yaml";

/** A template that does not render to exactly one Job; the rollout fails with `Invalid Job spec: <message>`. */
export class JobTemplateError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "JobTemplateError";
  }
}

/** A rendered Job manifest: a plain object, `kind: Job`. */
export type JobObject = Record<string, unknown> & { kind: "Job" };

/** Python's `str()` of a JSON value, as Jinja's filters see it (`True`, `None`, `3`). */
function pythonStr(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === true) return "True";
  if (value === false) return "False";
  if (value === null || value === undefined) return "None";
  if (typeof value === "number") return String(value);
  // A dict or list: Python would print its repr; JSON is the closest value a YAML reader parses back.
  return JSON.stringify(value);
}

/** `yaml_escape`: AGL's `json.dumps(str(value), ensure_ascii=True)`, which YAML reads back as the same string. */
export function yamlEscape(value: unknown): string {
  return JSON.stringify(pythonStr(value)).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Jinja's `tojson`: JSON with `<`, `>`, `&`, `'` escaped, safe inside YAML and HTML. */
function toJson(value: unknown): string {
  return JSON.stringify(value ?? null)
    .replaceAll("<", "\\u003c")
    .replaceAll(">", "\\u003e")
    .replaceAll("&", "\\u0026")
    .replaceAll("'", "\\u0027");
}

let environment: nunjucks.Environment | undefined;

/** One nunjucks environment with Jinja's Python-style methods (`dict.items()`, …) and the two filters. */
function jinjaEnvironment(): nunjucks.Environment {
  if (environment !== undefined) return environment;
  nunjucks.installJinjaCompat();
  environment = new nunjucks.Environment(null, { autoescape: false, throwOnUndefined: false });
  environment.addFilter("yaml_escape", yamlEscape);
  environment.addFilter("tojson", toJson);
  return environment;
}

/** Compiled templates by source text; templates repeat across the rollouts of one run. */
const compiled = new Map<string, nunjucks.Template>();
const MAX_COMPILED = 32;

function compile(source: string): nunjucks.Template {
  const hit = compiled.get(source);
  if (hit !== undefined) return hit;
  let template: nunjucks.Template;
  try {
    // eagerCompile: a syntax error surfaces here, not at the first render.
    template = new nunjucks.Template(source, jinjaEnvironment(), undefined, true);
  } catch (err) {
    throw new JobTemplateError(`job template is not valid Jinja: ${firstLine(err)}`, { cause: err });
  }
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value as string);
  compiled.set(source, template);
  return template;
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .join(" ");
}

/** Renders a Job template to its one Job. @throws {JobTemplateError} for bad Jinja or YAML, or not exactly one Job */
export function renderJobTemplate(source: string, variables: { job_name: string; input: unknown }): JobObject {
  let text: string;
  try {
    text = compile(source).render(variables);
  } catch (err) {
    if (err instanceof JobTemplateError) throw err;
    throw new JobTemplateError(`job template failed to render: ${firstLine(err)}`, { cause: err });
  }
  const documents = parseAllDocuments(text);
  const values: unknown[] = [];
  for (const document of documents) {
    const error = document.errors[0];
    if (error !== undefined) throw new JobTemplateError(`job template is not valid YAML: ${firstLine(error)}`);
    const value = document.toJS({ maxAliasCount: 100 }) as unknown;
    // An empty document (`---` alone) is skipped, as PyYAML's safe_load_all yields None for it.
    if (value !== null && value !== undefined) values.push(value);
  }
  if (values.length !== 1) throw new JobTemplateError("job template must render exactly one YAML document");
  const job = values[0];
  if (job === null || typeof job !== "object" || Array.isArray(job) || (job as { kind?: unknown }).kind !== "Job") {
    throw new JobTemplateError("job template must render a Kubernetes Job");
  }
  return job as JobObject;
}
