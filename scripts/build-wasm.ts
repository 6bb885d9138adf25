/**
 * @module Assembles the hand-written WebAssembly kernels (`src/engine/embedded/wasm/*.wat`) into TypeScript modules
 * holding their bytes (`*.wasm.ts`, base64), so the engine loads them with no build step and no `wabt` at run time.
 * Run `npx tsx scripts/build-wasm.ts` after editing a `.wat`; `wasm-decode.test.ts` fails while a `.wasm.ts`
 * is out of date. Exports {@link assemble} for that test.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import wabt from "wabt";

const dir = fileURLToPath(new URL("../src/engine/embedded/wasm/", import.meta.url));

/**
 * The TypeScript module text for one `.wat` source.
 * @param name - file name of the source, e.g. `decode.wat`
 * @param source - its WebAssembly text (SIMD, relaxed SIMD and bulk-memory instructions allowed)
 * @returns the module's text: a header and `export const WASM_BASE64 = "…"`
 * @throws {Error} on a syntax or validation error in the source
 */
export async function assemble(name: string, source: string): Promise<string> {
  const tools = await wabt();
  const module = tools.parseWat(name, source, {
    simd: true,
    relaxed_simd: true,
    bulk_memory: true,
    sat_float_to_int: true,
  });
  try {
    module.validate();
    const bytes = Buffer.from(module.toBinary({}).buffer);
    return [
      "/**",
      ` * @module The WebAssembly module assembled from \`${name}\` by scripts/build-wasm.ts (generated; do not edit).`,
      " */",
      "/** The assembled module, base64. */",
      `export const WASM_BASE64 =\n  "${bytes.toString("base64")}";`,
      "",
    ].join("\n");
  } finally {
    module.destroy();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".wat"))) {
    const out = `${dir}${file.replace(/\.wat$/, ".wasm.ts")}`;
    writeFileSync(out, await assemble(file, readFileSync(`${dir}${file}`, "utf8")));
    console.log(`wrote ${out}`);
  }
}
