/**
 * @module Debian's Chromium for browser tests, driven by playwright-core (never `npx playwright install`): headless,
 * no sandbox (CI runs as root), no GPU, no background network, a fresh profile per launch.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

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

/**
 * Whether browser tests may be skipped: only outside CI. In CI (`CI=true`) a missing Chromium is a failure, so a
 * broken install step can never pass as "skipped".
 * @returns true when there is no Chromium and this is not CI
 * @throws {Error} in CI when Chromium is missing
 */
export function skipWithoutChromium(): boolean {
  if (existsSync(chromiumPath())) return false;
  if (process.env.CI === "true") throw new Error(`CI=true but no Chromium at ${chromiumPath()}: .ci/run installs it`);
  return true;
}

/**
 * Launches Chromium on a fresh profile directory (playwright passes it as `--user-data-dir`).
 * @param viewport - window size in CSS px; default 1400 × 900
 * @returns the browser context; close it when done
 */
export async function launchChromium(viewport = { width: 1400, height: 900 }): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), "arclight-chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    args: [...CHROMIUM_FLAGS],
    viewport,
  });
}
