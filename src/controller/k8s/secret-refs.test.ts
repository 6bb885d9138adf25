import { describe, expect, it } from "vitest";
import { secretReferences } from "./secret-refs.js";

describe("secretReferences", () => {
  it("finds env secretKeyRefs, envFrom secretRefs, secret volumes and projected sources, with where they are", () => {
    const podSpec = {
      initContainers: [{ name: "init", envFrom: [{ configMapRef: { name: "cm" } }, { secretRef: { name: "s1" } }] }],
      containers: [
        {
          name: "agent",
          env: [
            { name: "PLAIN", value: "x" },
            { name: "TOKEN", valueFrom: { secretKeyRef: { name: "s2", key: "k" } } },
            { name: "FIELD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
          ],
        },
      ],
      volumes: [
        { name: "cfg", configMap: { name: "cm" } },
        { name: "keys", secret: { secretName: "s3" } },
        { name: "all", projected: { sources: [{ configMap: { name: "cm" } }, { secret: { name: "s4" } }] } },
      ],
    };
    expect(secretReferences(podSpec)).toEqual([
      { name: "s1", where: "spec.template.spec.initContainers[0].envFrom[1]" },
      { name: "s2", where: "spec.template.spec.containers[0].env[1] (TOKEN)" },
      { name: "s3", where: "spec.template.spec.volumes[1]" },
      { name: "s4", where: "spec.template.spec.volumes[2]" },
    ]);
  });

  it("ignores malformed entries instead of throwing (the API server judges the shape)", () => {
    expect(secretReferences({ containers: "nope", volumes: [null, 3, { secret: { secretName: 7 } }] })).toEqual([]);
  });
});
