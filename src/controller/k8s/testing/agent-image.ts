/**
 * @module The pod tests' agent image, assembled offline as a docker-archive tarball: the Debian base of
 * `scripts/build-agent-image.sh` plus this checkout's `sdk/python/arclight_agent`.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Reference of the agent image in containerd; pods name it with `imagePullPolicy: Never`. */
export const AGENT_IMAGE = "docker.io/arclight/agent:test";

/** Where `scripts/build-agent-image.sh` caches the base layer. */
export function agentBaseLayer(): string {
  const dir = process.env.ARCLIGHT_AGENT_IMAGE_DIR ?? join(homedir(), ".cache/arclight/agent-image-bookworm-2");
  return join(dir, "rootfs.tar");
}

/** Whether the base layer is built. */
export function agentBaseLayerMissing(): string | null {
  return existsSync(agentBaseLayer()) ? null : `no ${agentBaseLayer()}`;
}

/** The image config's `config` part (the OCI / docker image config's runtime defaults). */
export interface ImageRuntimeConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Writes a docker-archive tarball (`docker save` format) of uncompressed layer tars, base first; returns its path. */
export async function buildImageArchive(
  dir: string,
  ref: string,
  layers: string[],
  config: ImageRuntimeConfig,
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const diffIds = await Promise.all(layers.map(async (layer) => `sha256:${await sha256File(layer)}`));
  const imageConfig = {
    architecture: "amd64",
    os: "linux",
    config: { Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], ...config },
    rootfs: { type: "layers", diff_ids: diffIds },
    history: layers.map(() => ({ created_by: "arclight test image" })),
  };
  const configText = JSON.stringify(imageConfig);
  const configName = `${createHash("sha256").update(configText).digest("hex")}.json`;
  writeFileSync(join(dir, configName), configText);
  const layerNames = layers.map((_, i) => `layer${i}.tar`);
  writeFileSync(
    join(dir, "manifest.json"),
    JSON.stringify([{ Config: configName, RepoTags: [ref], Layers: layerNames }]),
  );
  const archive = join(dir, `${basename(dir)}.tar`);
  // The layer files go in under their archive names without being copied: tar's --transform renames them.
  const transforms = layers.flatMap((layer, i) => ["--transform", `s|^${escapeSed(layer.slice(1))}$|layer${i}.tar|`]);
  await run("tar", [
    "-cf",
    archive,
    "-C",
    dir,
    "manifest.json",
    configName,
    "-C",
    "/",
    ...transforms,
    ...layers.map((l) => l.slice(1)),
  ]);
  return archive;
}

function escapeSed(text: string): string {
  return text.replace(/[|\\.*[\]^$]/g, "\\$&");
}

/** The agent image's tarball: the cached base plus `arclight_agent` in python3's dist-packages. */
export async function buildAgentImage(dir: string): Promise<string> {
  const sdk = fileURLToPath(new URL("../../../../sdk/python", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const sdkLayer = join(dir, "sdk-layer.tar");
  await run("tar", [
    ...["--numeric-owner", "--owner=0", "--group=0", "--exclude=__pycache__", "-C", sdk, "-cf", sdkLayer],
    ...["--transform", "s|^arclight_agent|usr/lib/python3/dist-packages/arclight_agent|", "arclight_agent"],
  ]);
  return buildImageArchive(join(dir, "agent-image"), AGENT_IMAGE, [agentBaseLayer(), sdkLayer], {
    Cmd: ["python3"],
    Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONUNBUFFERED=1"],
    WorkingDir: "/work",
  });
}
