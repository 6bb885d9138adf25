/**
 * @module Comment lines per code line of the TypeScript under the given folders (default `src`), tests
 * (`*.test.ts`) left out. A comment line holds only a comment (`//`, or a line of a `/* … *\/` block); a code line is
 * any other non-blank line.
 *
 * Run: `node scripts/comment-ratio.mjs [DIR ...]`
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** @returns comment and code line counts of one file's text */
function count(text) {
  let comment = 0;
  let code = 0;
  let inBlock = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    if (inBlock) {
      comment++;
      if (line.includes("*/")) inBlock = false;
    } else if (line.startsWith("//")) comment++;
    else if (line.startsWith("/*")) {
      comment++;
      inBlock = !line.includes("*/", 2);
    } else code++;
  }
  return { comment, code };
}

for (const dir of process.argv.length > 2 ? process.argv.slice(2) : ["src"]) {
  let comment = 0;
  let code = 0;
  for (const file of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts") || file.endsWith(".test.ts")) continue;
    const counted = count(readFileSync(join(dir, file), "utf8"));
    comment += counted.comment;
    code += counted.code;
  }
  console.log(`${dir}: ${comment} comment lines, ${code} code lines, ${(comment / code).toFixed(3)} per code line`);
}
