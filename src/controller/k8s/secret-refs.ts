/** @module The Secrets a pod spec references (env, envFrom, volumes, projected sources), and where. */

/** One reference to a Secret by name, with the field path it sits at. */
export interface SecretReference {
  name: string;
  /** e.g. `spec.template.spec.containers[0].env[2]` (`QUESTION`), `spec.template.spec.volumes[1]`. */
  where: string;
}

type Obj = Record<string, unknown>;

function objectOf(value: unknown): Obj | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Obj) : undefined;
}

function listOf(value: unknown): Obj[] {
  return Array.isArray(value) ? value.map(objectOf).filter((v): v is Obj => v !== undefined) : [];
}

function nameAt(holder: Obj | undefined, field: string): string | undefined {
  const value = holder?.[field];
  return typeof value === "string" ? value : undefined;
}

/** References from one container's `env` and `envFrom`. */
function containerReferences(container: Obj, path: string): SecretReference[] {
  const refs: SecretReference[] = [];
  for (const [i, entry] of listOf(container.env).entries()) {
    const name = nameAt(objectOf(objectOf(entry.valueFrom)?.secretKeyRef), "name");
    if (name !== undefined) refs.push({ name, where: `${path}.env[${i}] (${String(entry.name)})` });
  }
  for (const [i, entry] of listOf(container.envFrom).entries()) {
    const name = nameAt(objectOf(entry.secretRef), "name");
    if (name !== undefined) refs.push({ name, where: `${path}.envFrom[${i}]` });
  }
  return refs;
}

/** References from the pod's volumes: `secret` volumes and `projected` sources. */
function volumeReferences(volumes: unknown, path: string): SecretReference[] {
  const refs: SecretReference[] = [];
  for (const [i, volume] of listOf(volumes).entries()) {
    const where = `${path}.volumes[${i}]`;
    const name = nameAt(objectOf(volume.secret), "secretName");
    if (name !== undefined) refs.push({ name, where });
    for (const source of listOf(objectOf(volume.projected)?.sources)) {
      const projected = nameAt(objectOf(source.secret), "name");
      if (projected !== undefined) refs.push({ name: projected, where });
    }
  }
  return refs;
}

/** Every Secret reference of a pod spec, in spec order. */
export function secretReferences(podSpec: Obj, path = "spec.template.spec"): SecretReference[] {
  const refs: SecretReference[] = [];
  for (const field of ["initContainers", "containers"]) {
    for (const [i, container] of listOf(podSpec[field]).entries()) {
      refs.push(...containerReferences(container, `${path}.${field}[${i}]`));
    }
  }
  refs.push(...volumeReferences(podSpec.volumes, path));
  return refs;
}
