#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script).
import("../dist/cli/main.js").catch((err) => {
  if (err && err.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("dist/cli/main.js")) {
    console.error("arclight: dist/ is missing; run `npm run build` (npm ci does this) first.");
    process.exit(1);
  }
  throw err;
});
