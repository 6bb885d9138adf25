/** @module The controller's configuration: one strict zod schema with a default for every key. */
import { z } from "zod";
import { EnvMapSchema, LocalConfigSchema, ResourceNameSchema } from "../protocol/index.js";

/** Every controller setting. Unknown keys fail; units are in the names. */
export const ControllerConfigSchema = z.strictObject({
  gateway_url: z
    .url({ protocol: /^https?$/ })
    .default("http://127.0.0.1:8080")
    .describe("gateway base URL"),
  key: z
    .string()
    .default("")
    .describe(
      "gateway admin key (also ARCLIGHT_KEY / AGL_KEY / --key-file); local agents get a token for their own attempt as AGL_KEY, never this key (k8s: see kubernetes.md)",
    ),
  mode: z
    .enum(["local", "k8s"])
    .default("local")
    .describe(
      "where agents run; `local` spawns processes on this machine, `k8s` creates one Kubernetes Job per attempt",
    ),
  pool_size: z.number().int().min(1).default(8).describe("most agent processes alive at once"),
  poll_interval_seconds: z.number().positive().default(1).describe("seconds between reconcile passes"),
  spawn_rate_per_second: z
    .number()
    .positive()
    .default(20)
    .describe("most process spawns per second (token bucket; a rollout handed to an idle reused runner spends none)"),
  spawn_burst: z.number().int().min(1).default(8).describe("spawns allowed at once before the rate applies"),
  log_tail_bytes: z
    .number()
    .int()
    .min(0)
    .default(65_536)
    .describe("bytes of an agent's combined stdout/stderr kept and stored as a `log` event when it fails"),
  kill_grace_seconds: z
    .number()
    .min(0)
    .default(5)
    .describe("seconds between SIGTERM and SIGKILL when a process group is killed"),
  lease_seconds: z
    .number()
    .min(0)
    .default(60)
    .describe(
      "lease on each running attempt, renewed every pass: when no controller renews it (this one died and none " +
        "restarted), the gateway fails the attempt after this many seconds, retrying it if attempts are left; 0: none",
    ),
  reuse_processes: z
    .boolean()
    .default(false)
    .describe(
      "local: run `agent_class` agents in long-lived runner processes, one rollout after another each, instead of a new process per rollout (saves Node's start; the agent must read its environment per run and leave nothing running; docs/controller.md)",
    ),
  python: z
    .string()
    .min(1)
    .default("python3")
    .describe(
      "Python interpreter of Python `agent_class` rollouts (`package.module:ClassName`), run as `python -m arclight_agent run`; it needs `pip install ./sdk/python` (docs/controller.md)",
    ),
  state_file: z
    .string()
    .min(1)
    .default(".arclight/controller-state.json")
    .describe("where the controller records the processes it owns, so a restarted controller finds them"),
  cwd: z.string().optional().describe("working directory of agent processes; default: the controller's"),
  local: LocalConfigSchema.optional().describe(
    "command / agent_class / env_map for rollouts whose config has none; always allowed to run",
  ),
  resources_env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an env var name"), ResourceNameSchema)
    .default({})
    .describe(
      "env var -> resource name: each agent gets the resource's value (the version its rollout pins in metadata.resources, else the latest), e.g. {SYSTEM_PROMPT: prompt}",
    ),
  resources_file_env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an env var name"), ResourceNameSchema)
    .default({})
    .describe("env var -> resource name: each agent gets the path of a file holding the resource's value"),
  resources_dir: z
    .string()
    .default(".arclight/resources")
    .describe("folder of the resources_file_env files (NAME-vVERSION.txt)"),
  allowed_commands: z
    .array(z.array(z.string()).min(1))
    .default([])
    .describe(
      "argv lists a rollout's own config.local.command may be (exact match); any other command fails the rollout",
    ),
  allowed_agent_classes: z
    .array(z.string().min(1))
    .default([])
    .describe("`module.js:Export` values a rollout's own config.local.agent_class may be"),
  allow_any_command: z
    .boolean()
    .default(false)
    .describe(
      "run whatever command or agent_class a rollout names (only where everyone holding the admin key may run code here)",
    ),
  list_page_size: z.number().int().min(1).max(10_000).default(500).describe("rollouts fetched per list request"),
  standard_env: z
    .boolean()
    .default(true)
    .describe(
      "also give agents OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY (the proxy's URLs and the gateway key), so a client built with no arguments is captured, and the OTEL_EXPORTER_OTLP_* / OTEL_RESOURCE_ATTRIBUTES variables that send a stock OpenTelemetry SDK's spans to the rollout; an env_map entry of the same name wins",
    ),
  namespace: z.string().min(1).default("default").describe("k8s: namespace of the Jobs and of their key Secrets"),
  agent_url: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("k8s: gateway base URL as agent pods reach it (e.g. the gateway Service); default: gateway_url"),
  kubeconfig: z
    .string()
    .min(1)
    .optional()
    .describe("k8s: kubeconfig file; default: KUBECONFIG, ~/.kube/config, else the pod's in-cluster service account"),
  max_jobs_per_minute: z.number().positive().default(100).describe("k8s: most Jobs created per minute (token bucket)"),
  job_burst: z.number().int().min(1).default(10).describe("k8s: Jobs created back to back before the rate applies"),
  ttl_after_finished_seconds: z
    .number()
    .int()
    .min(0)
    .default(600)
    .describe("k8s: ttlSecondsAfterFinished of every Job (Kubernetes deletes a finished Job this long after)"),
  job_template_file: z
    .string()
    .min(1)
    .optional()
    .describe("k8s: Job template (Jinja + YAML) for rollouts whose config.k8s is null"),
  key_secret_name: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, "a DNS-1123 subdomain")
    .default("arclight-agent-key")
    .describe(
      "k8s: the shared Secret older controllers put the admin key in: deleted once no Job references it; a Job template still referencing it is refused",
    ),
  orphan_grace_seconds: z
    .number()
    .min(0)
    .default(300)
    .describe(
      "k8s: a finished Job whose rollout the gateway no longer knows, or a key Secret no Job owns or references, is deleted after this long",
    ),
  pod_log_lines: z
    .number()
    .int()
    .min(1)
    .default(100)
    .describe("k8s: last lines of a failed attempt's pod log stored as its `log` event"),
  k8s_env_map: EnvMapSchema.default({}).describe(
    "k8s: env var name -> dotted path into the rollout, set in every container, e.g. {QUESTION: 'input.question'}",
  ),
  log_level: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .describe("pino log level of the controller"),
});

/** Controller settings, defaults applied. */
export type ControllerConfig = z.infer<typeof ControllerConfigSchema>;
/** Controller settings as written in YAML or flags. */
export type ControllerConfigInput = z.input<typeof ControllerConfigSchema>;
