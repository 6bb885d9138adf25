/** @module Debian's Chromium for browser tests via playwright-core: headless, no sandbox (CI runs as root). */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { skipWithout } from "./requirement.js";

/** Where `apt-get install -y chromium` puts the browser; `ARCLIGHT_CHROMIUM` overrides. */
export function chromiumPath(): string {
  return process.env.ARCLIGHT_CHROMIUM ?? "/usr/bin/chromium";
}

/** Flags of every launch. */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Whether browser tests are skipped (see `skipWithout`). @throws {Error} under `CI=true` when Chromium is missing */
export function skipWithoutChromium(): boolean {
  return skipWithout({
    name: "Chromium (the dashboard's browser tests)",
    missing: () => (existsSync(chromiumPath()) ? null : `no browser at ${chromiumPath()}`),
    howToGet: "apt-get install chromium (as .ci/run does), or set ARCLIGHT_CHROMIUM to a Chromium binary",
  });
}

/** Launches Chromium on a fresh profile; close the returned context when done. */
export async function launchChromium(viewport = { width: 1400, height: 900 }): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), "arclight-chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    args: [...CHROMIUM_FLAGS],
    viewport,
  });
}
