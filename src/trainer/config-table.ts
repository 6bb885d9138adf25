/**
 * @module Renders a strict zod config schema as a *Key | Default | Description* markdown table (docs/configuration.md, and
 * `arclight config --print` later), so the documentation is generated from the schema and cannot drift.
 */
import type { z } from "zod";

/** One documented config key. */
export interface ConfigKeyDoc {
  /** Dotted path, e.g. `loss.clip_low`. */
  key: string;
  /** The default as JSON, e.g. `0.2`, `"trajectory"`, `null`. */
  defaultJson: string;
  /** The field's `.describe()` text. */
  description: string;
}

/** The zod 4 internals this module reads: a wrapper's inner type, a default's value, an object's shape. */
interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  shape?: Record<string, z.ZodType>;
}

function defOf(schema: z.ZodType): SchemaDef {
  return schema.def as unknown as SchemaDef;
}

/** Strips `default`, `nullable`, `optional` and `prefault` wrappers down to the schema that holds the shape. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let def = defOf(current); def.innerType !== undefined; def = defOf(current)) current = def.innerType;
  return current;
}

/**
 * Lists every leaf key of an object schema, depth first in declaration order; a nested object section contributes its
 * own leaves (`loss.clip_low`), not a row of its own.
 * @param schema - a (possibly refined) zod object schema whose leaves carry `.default()` and `.describe()`
 * @param prefix - dotted path of `schema` itself; empty at the root
 * @returns one entry per leaf key
 * @throws {TypeError} when `schema` is not an object schema, or a leaf lacks a default or description
 */
export function listConfigKeys(schema: z.ZodType, prefix = ""): ConfigKeyDoc[] {
  const shape = defOf(unwrap(schema)).shape;
  if (shape === undefined) throw new TypeError(`config schema ${prefix || "(root)"} is not an object`);
  const docs: ConfigKeyDoc[] = [];
  for (const [name, field] of Object.entries(shape)) {
    const key = prefix === "" ? name : `${prefix}.${name}`;
    if (defOf(unwrap(field)).type === "object") {
      docs.push(...listConfigKeys(field, key));
      continue;
    }
    const def = defOf(field);
    if (def.type !== "default") throw new TypeError(`config key ${key} has no .default()`);
    if (field.description === undefined) throw new TypeError(`config key ${key} has no .describe()`);
    docs.push({ key, defaultJson: JSON.stringify(def.defaultValue), description: field.description });
  }
  return docs;
}

/** Escapes the characters that would break a markdown table cell. */
function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/**
 * Renders the *Key | Default | Description* markdown table of a config schema.
 * @param schema - a zod object schema (see {@link listConfigKeys})
 * @returns the table, header included, lines joined with `\n`, no trailing newline
 * @throws {TypeError} as {@link listConfigKeys}
 */
export function renderConfigTable(schema: z.ZodType): string {
  const lines = ["| Key | Default | Description |", "|---|---|---|"];
  for (const doc of listConfigKeys(schema)) {
    lines.push(`| \`${doc.key}\` | \`${cell(doc.defaultJson)}\` | ${cell(doc.description)} |`);
  }
  return lines.join("\n");
}
