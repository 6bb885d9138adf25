/**
 * @module Question templates of the generated benchmark, in Spider's four hardness levels: easy (one table, at most
 * one condition or aggregate), medium (a join, GROUP BY, ORDER BY … LIMIT, two conditions), hard (GROUP BY … HAVING
 * over a join, a nested query, NOT IN) and extra (several of these at once, INTERSECT / EXCEPT). Each template turns
 * a domain's words and values drawn from its database into a question and its gold SQL.
 * @see Yu et al., arXiv:1809.08887, §5 (Spider's hardness criteria)
 */
import type { Prng } from "../../examples/calculator/prng.js";
import type { CategoryColumn, Domain, Entity, NumberColumn, Relation } from "./domains.js";

/** Spider's hardness levels. */
export type Difficulty = "easy" | "medium" | "hard" | "extra";

/** One generated question. */
export interface Question {
  question: string;
  query: string;
  difficulty: Difficulty;
}

/** What a template may read: the domain, a random source, and one-column lookups on its database. */
export interface TemplateContext {
  domain: Domain;
  rng: Prng;
  /** The values of the first column of `sql`'s rows. */
  column(sql: string): (string | number)[];
}

type Template = (ctx: TemplateContext) => Question | null;

const AGGREGATES = [
  { fn: "max", word: "maximum" },
  { fn: "min", word: "minimum" },
  { fn: "avg", word: "average" },
  { fn: "sum", word: "total" },
] as const;

function pickEntity(ctx: TemplateContext): Entity {
  return ctx.rng.pick(ctx.domain.entities);
}
function pickRelation(ctx: TemplateContext): Relation {
  return ctx.rng.pick(ctx.domain.relations);
}
function pickNumber(ctx: TemplateContext, e: Entity): NumberColumn {
  return ctx.rng.pick(e.numbers);
}
function pickCategory(ctx: TemplateContext, e: Entity): CategoryColumn {
  return ctx.rng.pick(e.categories);
}
/** A value of `column` that some row of `table` holds. */
function presentValue(ctx: TemplateContext, table: string, column: string): string | number {
  return ctx.rng.pick(ctx.column(`SELECT DISTINCT ${column} FROM ${table} WHERE ${column} IS NOT NULL ORDER BY 1`));
}
/** A threshold between the column's values: one of them, so some rows are above it and some below. */
function threshold(ctx: TemplateContext, table: string, column: string): number {
  const values = ctx.column(`SELECT ${column} FROM ${table} ORDER BY 1`) as number[];
  return values[ctx.rng.int(Math.floor(values.length / 4), Math.floor((3 * values.length) / 4))]!;
}
/** Whether no two rows of `table` share a value of `column`, so ordering by it gives one answer. */
function uniqueColumn(ctx: TemplateContext, table: string, column: string): boolean {
  return ctx.column(`SELECT count(*) - count(DISTINCT ${column}) FROM ${table}`)[0] === 0;
}
function quote(value: string | number): string {
  return typeof value === "number" ? String(value) : `'${value.replaceAll("'", "''")}'`;
}
function names(e: Entity): string {
  return `${e.namePhrase}s`;
}

const easy: Template[] = [
  (ctx) => {
    const e = pickEntity(ctx);
    return {
      question: `How many ${e.plural} are there?`,
      query: `SELECT count(*) FROM ${e.table}`,
      difficulty: "easy",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    return {
      question: `List the ${names(e)} of all ${e.plural}.`,
      query: `SELECT ${e.nameColumn} FROM ${e.table}`,
      difficulty: "easy",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const c = pickCategory(ctx, e);
    const v = presentValue(ctx, e.table, c.column);
    return {
      question: `What are the ${names(e)} of the ${e.plural} whose ${c.phrase} is ${v}?`,
      query: `SELECT ${e.nameColumn} FROM ${e.table} WHERE ${c.column} = ${quote(v)}`,
      difficulty: "easy",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const n = pickNumber(ctx, e);
    const a = ctx.rng.pick(AGGREGATES);
    if (a.fn === "sum" && n.year) return null;
    return {
      question: `What is the ${a.word} ${n.phrase} of all ${e.plural}?`,
      query: `SELECT ${a.fn}(${n.column}) FROM ${e.table}`,
      difficulty: "easy",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const n = pickNumber(ctx, e);
    const k = threshold(ctx, e.table, n.column);
    return {
      question: `Which ${e.plural} have a ${n.phrase} greater than ${k}? Give their ${names(e)}.`,
      query: `SELECT ${e.nameColumn} FROM ${e.table} WHERE ${n.column} > ${k}`,
      difficulty: "easy",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    if (!e.nullable) return null;
    return {
      question: `How many ${e.plural} have no ${e.nullable.phrase} recorded?`,
      query: `SELECT count(*) FROM ${e.table} WHERE ${e.nullable.column} IS NULL`,
      difficulty: "easy",
    };
  },
];

const medium: Template[] = [
  (ctx) => {
    const e = pickEntity(ctx);
    const c = pickCategory(ctx, e);
    return {
      question: `How many ${e.plural} are there for each ${c.phrase}?`,
      query: `SELECT ${c.column}, count(*) FROM ${e.table} GROUP BY ${c.column}`,
      difficulty: "medium",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const n = pickNumber(ctx, e);
    const [word, dir] = ctx.rng.pick([
      ["highest", "DESC"],
      ["lowest", "ASC"],
    ] as const);
    if (!uniqueColumn(ctx, e.table, n.column)) return null;
    return {
      question: `What is the ${e.namePhrase} of the ${e.singular} with the ${word} ${n.phrase}?`,
      query: `SELECT ${e.nameColumn} FROM ${e.table} ORDER BY ${n.column} ${dir} LIMIT 1`,
      difficulty: "medium",
    };
  },
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    return {
      question: `List the ${child.namePhrase} of each ${child.singular} together with the ${parent.namePhrase} of its ${parent.singular}.`,
      query: `SELECT T1.${child.nameColumn}, T2.${parent.nameColumn} FROM ${child.table} AS T1 JOIN ${parent.table} AS T2 ON T1.${foreignKey} = T2.id`,
      difficulty: "medium",
    };
  },
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    const c = pickCategory(ctx, parent);
    const v = presentValue(ctx, parent.table, c.column);
    return {
      question: `What are the ${names(child)} of the ${child.plural} whose ${parent.singular} has the ${c.phrase} ${v}?`,
      query: `SELECT T1.${child.nameColumn} FROM ${child.table} AS T1 JOIN ${parent.table} AS T2 ON T1.${foreignKey} = T2.id WHERE T2.${c.column} = ${quote(v)}`,
      difficulty: "medium",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const c = pickCategory(ctx, e);
    const n = pickNumber(ctx, e);
    const v = presentValue(ctx, e.table, c.column);
    const k = threshold(ctx, e.table, n.column);
    return {
      question: `Which ${e.plural} have the ${c.phrase} ${v} and a ${n.phrase} below ${k}? List their ${names(e)}.`,
      query: `SELECT ${e.nameColumn} FROM ${e.table} WHERE ${c.column} = ${quote(v)} AND ${n.column} < ${k}`,
      difficulty: "medium",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const n = pickNumber(ctx, e);
    if (!uniqueColumn(ctx, e.table, n.column)) return null;
    return {
      question: `List the ${names(e)} of all ${e.plural}, ordered by ${n.phrase} from highest to lowest.`,
      query: `SELECT ${e.nameColumn} FROM ${e.table} ORDER BY ${n.column} DESC`,
      difficulty: "medium",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const c = pickCategory(ctx, e);
    const n = pickNumber(ctx, e);
    return {
      question: `What is the average ${n.phrase} of the ${e.plural} for each ${c.phrase}?`,
      query: `SELECT ${c.column}, avg(${n.column}) FROM ${e.table} GROUP BY ${c.column}`,
      difficulty: "medium",
    };
  },
];

const hard: Template[] = [
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    const k = ctx.rng.int(2, 5);
    return {
      question: `Which ${parent.plural} have more than ${k} ${child.plural}? Give their ${names(parent)}.`,
      query: `SELECT T2.${parent.nameColumn} FROM ${child.table} AS T1 JOIN ${parent.table} AS T2 ON T1.${foreignKey} = T2.id GROUP BY T2.id HAVING count(*) > ${k}`,
      difficulty: "hard",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const n = pickNumber(ctx, e);
    return {
      question: `Which ${e.plural} have a ${n.phrase} above the average ${n.phrase} of all ${e.plural}? List their ${names(e)}.`,
      query: `SELECT ${e.nameColumn} FROM ${e.table} WHERE ${n.column} > (SELECT avg(${n.column}) FROM ${e.table})`,
      difficulty: "hard",
    };
  },
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    const c = pickCategory(ctx, child);
    const v = presentValue(ctx, child.table, c.column);
    return {
      question: `What are the ${names(parent)} of the ${parent.plural} that have no ${child.singular} with the ${c.phrase} ${v}?`,
      query: `SELECT ${parent.nameColumn} FROM ${parent.table} WHERE id NOT IN (SELECT ${foreignKey} FROM ${child.table} WHERE ${c.column} = ${quote(v)})`,
      difficulty: "hard",
    };
  },
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    const n = pickNumber(ctx, child);
    if (n.year) return null;
    return {
      question: `For each ${parent.singular}, what is the total ${n.phrase} of its ${child.plural}? Give the ${parent.namePhrase} and the total.`,
      query: `SELECT T2.${parent.nameColumn}, sum(T1.${n.column}) FROM ${child.table} AS T1 JOIN ${parent.table} AS T2 ON T1.${foreignKey} = T2.id GROUP BY T2.id`,
      difficulty: "hard",
    };
  },
];

const extra: Template[] = [
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    // "Most" only: the parent with the fewest may have none, which the join cannot see.
    const counts = `SELECT count(*) AS c FROM ${child.table} GROUP BY ${foreignKey}`;
    if (ctx.column(`SELECT count(*) FROM (${counts}) WHERE c = (SELECT max(c) FROM (${counts}))`)[0] !== 1) return null;
    return {
      question: `Which ${parent.singular} has the most ${child.plural}? Give its ${parent.namePhrase} and the number of ${child.plural}.`,
      query: `SELECT T2.${parent.nameColumn}, count(*) FROM ${child.table} AS T1 JOIN ${parent.table} AS T2 ON T1.${foreignKey} = T2.id GROUP BY T2.id ORDER BY count(*) DESC LIMIT 1`,
      difficulty: "extra",
    };
  },
  (ctx) => {
    const e = pickEntity(ctx);
    const c = pickCategory(ctx, e);
    const n = pickNumber(ctx, e);
    const high = threshold(ctx, e.table, n.column);
    const low = threshold(ctx, e.table, n.column);
    return {
      question: `Which ${c.phrase} values have both a ${e.singular} with a ${n.phrase} above ${high} and a ${e.singular} with a ${n.phrase} below ${low}?`,
      query: `SELECT ${c.column} FROM ${e.table} WHERE ${n.column} > ${high} INTERSECT SELECT ${c.column} FROM ${e.table} WHERE ${n.column} < ${low}`,
      difficulty: "extra",
    };
  },
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    const c = pickCategory(ctx, child);
    const v = presentValue(ctx, child.table, c.column);
    const join = `FROM ${parent.table} AS T2 JOIN ${child.table} AS T1 ON T1.${foreignKey} = T2.id`;
    return {
      question: `Which ${parent.plural} have ${child.plural}, but none with the ${c.phrase} ${v}? Give their ${names(parent)}.`,
      query: `SELECT T2.${parent.nameColumn} ${join} EXCEPT SELECT T2.${parent.nameColumn} ${join} WHERE T1.${c.column} = ${quote(v)}`,
      difficulty: "extra",
    };
  },
  (ctx) => {
    const { child, parent, foreignKey } = pickRelation(ctx);
    const n = pickNumber(ctx, child);
    const p = presentValue(ctx, parent.table, parent.nameColumn);
    if (!uniqueColumn(ctx, child.table, n.column)) return null;
    return {
      question: `List the ${names(child)} of the ${child.plural} whose ${n.phrase} is higher than that of every ${child.singular} of the ${parent.singular} ${p}, from highest to lowest ${n.phrase}.`,
      query: `SELECT ${child.nameColumn} FROM ${child.table} WHERE ${n.column} > (SELECT max(T1.${n.column}) FROM ${child.table} AS T1 JOIN ${parent.table} AS T2 ON T1.${foreignKey} = T2.id WHERE T2.${parent.nameColumn} = ${quote(p)}) ORDER BY ${n.column} DESC`,
      difficulty: "extra",
    };
  },
];

/** The templates of each level. */
export const TEMPLATES: Readonly<Record<Difficulty, readonly Template[]>> = { easy, medium, hard, extra };
