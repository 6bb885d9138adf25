/** @module Vite build of the dashboard: `ui/` → `dist/ui`, served by the gateway under `/ui/`. */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/ui/",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../dist/ui", import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1024,
  },
});
