import { describe, expect, it } from "vitest";
import { JobTemplateError, renderJobTemplate, yamlEscape } from "./job-template.js";

/** An Agent Lightning v1.0-style template: env values through yaml_escape, `~` concatenation, the job_name variable. */
const AGL_TEMPLATE = `
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ job_name }}
  labels:
    team: rl
spec:
  template:
    spec:
      containers:
        - name: agent
          image: {{ (input.image_name ~ ":openai") | yaml_escape }}
          command: ["python", "agent.py"]
          env:
            - name: QUESTION
              value: {{ input.question | yaml_escape }}
            - name: RESULT
              value: {{ input.result | yaml_escape }}
`;

describe("renderJobTemplate", () => {
  it("renders an AGL-style template with job_name, input and yaml_escape into the Job AGL would build", () => {
    const input = { image_name: "swebench/repo", question: 'say "hi":\n  - not a list', result: 42 };
    const job = renderJobTemplate(AGL_TEMPLATE, { job_name: "arclight-rollout-r1", input });
    expect(job).toEqual({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "arclight-rollout-r1", labels: { team: "rl" } },
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: "agent",
                image: "swebench/repo:openai",
                command: ["python", "agent.py"],
                env: [
                  { name: "QUESTION", value: 'say "hi":\n  - not a list' },
                  // yaml_escape quotes a number, as AGL's json.dumps(str(value)) does: env values must be strings.
                  { name: "RESULT", value: "42" },
                ],
              },
            ],
          },
        },
      },
    });
  });

  it("keeps a YAML-special or non-ASCII input a plain string through yaml_escape", () => {
    const template = "kind: Job\nspec:\n  x: {{ input | yaml_escape }}\n";
    for (const value of ["null", "yes", "{a: 1}", "# not a comment", "–≠日本", "a\u2028b", "'"]) {
      const job = renderJobTemplate(template, { job_name: "j", input: value });
      expect((job.spec as { x: unknown }).x).toBe(value);
    }
  });

  it("escapes like Python's json.dumps(str(value), ensure_ascii=True)", () => {
    expect(yamlEscape("é\n")).toBe('"\\u00e9\\n"');
    expect(yamlEscape(true)).toBe('"True"');
    expect(yamlEscape(null)).toBe('"None"');
    expect(yamlEscape(1.5)).toBe('"1.5"');
  });

  it("supports Jinja's dict.items() and {% raw %}", () => {
    const template = `kind: Job
metadata:
  annotations:
{% for k, v in input.items() %}    {{ k }}: {{ v | yaml_escape }}
{% endfor %}    raw: "{% raw %}{{ kept }}{% endraw %}"
`;
    const job = renderJobTemplate(template, { job_name: "j", input: { a: "1", b: "two" } });
    expect((job.metadata as { annotations: unknown }).annotations).toEqual({ a: "1", b: "two", raw: "{{ kept }}" });
  });

  it("fails naming malformed YAML", () => {
    expect(() => renderJobTemplate("kind: Job\nspec: [\n", { job_name: "j", input: {} })).toThrow(
      /job template is not valid YAML/,
    );
  });

  it("fails naming malformed Jinja", () => {
    expect(() =>
      renderJobTemplate("kind: Job\nmetadata:\n  name: {{ job_name\n", { job_name: "j", input: {} }),
    ).toThrow(/job template is not valid Jinja/);
  });

  it("fails when the document is not a Job", () => {
    expect(() => renderJobTemplate("apiVersion: v1\nkind: Pod\nmetadata: {}\n", { job_name: "j", input: {} })).toThrow(
      new JobTemplateError("job template must render a Kubernetes Job"),
    );
  });

  it("fails on two documents and on none, but skips empty ones as PyYAML does", () => {
    const two = "kind: Job\n---\nkind: Job\n";
    expect(() => renderJobTemplate(two, { job_name: "j", input: {} })).toThrow(/exactly one YAML document/);
    expect(() => renderJobTemplate("# nothing\n", { job_name: "j", input: {} })).toThrow(/exactly one YAML document/);
    expect(renderJobTemplate("---\n---\nkind: Job\n", { job_name: "j", input: {} })).toEqual({ kind: "Job" });
  });
});
