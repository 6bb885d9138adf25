/**
 * @module The dashboard's built browser files (`dist/ui`, made by `vite build` at install): read once into memory and
 * served with their content type. Vite names assets by content hash, so they may be cached for good.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Where `vite build` writes the dashboard: `<package>/dist/ui` (the same path from `src/` and from `dist/`). */
export const DEFAULT_UI_DIR = fileURLToPath(new URL("../../../dist/ui", import.meta.url));

/** One file to serve. */
export interface UiAsset {
  body: Buffer;
  contentType: string;
  /** True for content-hashed files under `assets/`. */
  immutable: boolean;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

/** Every file path under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/**
 * Reads the built dashboard.
 * @param dir - the build folder (holds `index.html`)
 * @returns files keyed by their URL path below `/ui/` (`index.html`, `assets/index-abc123.js`); empty when `dir`
 *   has no `index.html` (the UI was not built)
 */
export function loadUiAssets(dir: string = DEFAULT_UI_DIR): Map<string, UiAsset> {
  const assets = new Map<string, UiAsset>();
  if (!existsSync(join(dir, "index.html"))) return assets;
  for (const path of filesUnder(dir)) {
    const key = relative(dir, path).split(sep).join("/");
    assets.set(key, {
      body: readFileSync(path),
      contentType: CONTENT_TYPES[extname(path)] ?? "application/octet-stream",
      immutable: key.startsWith("assets/"),
    });
  }
  return assets;
}
