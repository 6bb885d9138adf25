/**
 * @module The generated benchmark's databases: four small domains, each a parent table and child tables that point
 * to it, with the words the question templates need (what a row is called, which columns are numbers, categories or
 * may be NULL) and a seeded row generator.
 */
import type { Prng } from "../../examples/calculator/prng.js";

/** A numeric column and how a question names it. */
export interface NumberColumn {
  column: string;
  phrase: string;
  /** Whether values are REAL (averages and totals of them are floats). */
  real?: boolean;
  /** A year: averaged, compared and ordered, never summed. */
  year?: boolean;
}

/** A text column with a few repeated values (a city, a status). */
export interface CategoryColumn {
  column: string;
  phrase: string;
  values: readonly string[];
}

/** One table and the words for its rows. */
export interface Entity {
  table: string;
  singular: string;
  plural: string;
  /** The text column that names a row (unique), and how a question calls it (`name`, `title`). */
  nameColumn: string;
  namePhrase: string;
  numbers: readonly NumberColumn[];
  categories: readonly CategoryColumn[];
  /** A column that is NULL for some rows, and what it holds. */
  nullable?: { column: string; phrase: string };
}

/** A child table's foreign key to its parent's `id`. */
export interface Relation {
  child: Entity;
  parent: Entity;
  foreignKey: string;
}

/** One domain: its database id, tables (parents first), relations and row counts. */
export interface Domain {
  dbId: string;
  entities: readonly Entity[];
  relations: readonly Relation[];
  /** Rows per table. */
  rows: Readonly<Record<string, number>>;
}

const CITIES = ["Lisbon", "Oslo", "Denver", "Osaka", "Nairobi", "Lima"] as const;
const FIRST = [
  "Ada",
  "Ben",
  "Chloe",
  "Dmitri",
  "Elena",
  "Farid",
  "Grace",
  "Hugo",
  "Ines",
  "Jonas",
  "Kira",
  "Liam",
  "Mona",
  "Nils",
  "Omar",
  "Priya",
  "Quinn",
  "Rosa",
  "Sven",
  "Tara",
  "Umar",
  "Vera",
  "Wen",
  "Yusuf",
] as const;
const LAST = [
  "Alvarez",
  "Brooks",
  "Chen",
  "Dubois",
  "Eriksen",
  "Fischer",
  "Garcia",
  "Haddad",
  "Ito",
  "Jensen",
  "Kowalski",
  "Larsen",
  "Moreau",
  "Novak",
  "Okafor",
  "Petrov",
] as const;

function entity(e: Entity): Entity {
  return e;
}

const department = entity({
  table: "department",
  singular: "department",
  plural: "departments",
  nameColumn: "name",
  namePhrase: "name",
  numbers: [{ column: "budget", phrase: "budget" }],
  categories: [{ column: "building", phrase: "building", values: ["Watson", "Taylor", "Packard", "Painter"] }],
});
const instructor = entity({
  table: "instructor",
  singular: "instructor",
  plural: "instructors",
  nameColumn: "name",
  namePhrase: "name",
  numbers: [
    { column: "salary", phrase: "salary" },
    { column: "hire_year", phrase: "hire year", year: true },
  ],
  categories: [{ column: "rank", phrase: "rank", values: ["lecturer", "assistant", "associate", "full"] }],
  nullable: { column: "office", phrase: "office" },
});
const course = entity({
  table: "course",
  singular: "course",
  plural: "courses",
  nameColumn: "title",
  namePhrase: "title",
  numbers: [
    { column: "credits", phrase: "credits" },
    { column: "enrollment", phrase: "enrollment" },
  ],
  categories: [{ column: "level", phrase: "level", values: ["intro", "intermediate", "advanced"] }],
});

const customer = entity({
  table: "customer",
  singular: "customer",
  plural: "customers",
  nameColumn: "name",
  namePhrase: "name",
  numbers: [{ column: "credit_limit", phrase: "credit limit" }],
  categories: [
    { column: "city", phrase: "city", values: CITIES },
    { column: "segment", phrase: "segment", values: ["retail", "wholesale", "online"] },
  ],
  nullable: { column: "email", phrase: "email address" },
});
const purchase = entity({
  table: "purchase",
  singular: "purchase",
  plural: "purchases",
  nameColumn: "code",
  namePhrase: "code",
  numbers: [
    { column: "amount", phrase: "amount", real: true },
    { column: "quantity", phrase: "quantity" },
  ],
  categories: [{ column: "status", phrase: "status", values: ["paid", "shipped", "returned"] }],
});

const author = entity({
  table: "author",
  singular: "author",
  plural: "authors",
  nameColumn: "name",
  namePhrase: "name",
  numbers: [{ column: "birth_year", phrase: "birth year", year: true }],
  categories: [{ column: "nationality", phrase: "nationality", values: ["Irish", "Chilean", "Korean", "Nigerian"] }],
});
const book = entity({
  table: "book",
  singular: "book",
  plural: "books",
  nameColumn: "title",
  namePhrase: "title",
  numbers: [
    { column: "pages", phrase: "number of pages" },
    { column: "rating", phrase: "rating", real: true },
  ],
  categories: [{ column: "genre", phrase: "genre", values: ["novel", "poetry", "history", "science"] }],
  nullable: { column: "isbn", phrase: "ISBN" },
});

const airline = entity({
  table: "airline",
  singular: "airline",
  plural: "airlines",
  nameColumn: "name",
  namePhrase: "name",
  numbers: [{ column: "founded", phrase: "founding year", year: true }],
  categories: [{ column: "country", phrase: "country", values: ["Portugal", "Norway", "Japan", "Kenya", "Peru"] }],
});
const flight = entity({
  table: "flight",
  singular: "flight",
  plural: "flights",
  nameColumn: "flight_number",
  namePhrase: "flight number",
  numbers: [
    { column: "distance", phrase: "distance" },
    { column: "price", phrase: "price", real: true },
  ],
  categories: [
    { column: "origin", phrase: "origin city", values: CITIES },
    { column: "status", phrase: "status", values: ["on time", "delayed", "cancelled"] },
  ],
});

/** The four domains, in the order their databases are written. */
export const DOMAINS: readonly Domain[] = [
  {
    dbId: "college",
    entities: [department, instructor, course],
    relations: [
      { child: instructor, parent: department, foreignKey: "department_id" },
      { child: course, parent: department, foreignKey: "department_id" },
    ],
    rows: { department: 7, instructor: 36, course: 40 },
  },
  {
    dbId: "retail",
    entities: [customer, purchase],
    relations: [{ child: purchase, parent: customer, foreignKey: "customer_id" }],
    rows: { customer: 14, purchase: 60 },
  },
  {
    dbId: "library",
    entities: [author, book],
    relations: [{ child: book, parent: author, foreignKey: "author_id" }],
    rows: { author: 10, book: 48 },
  },
  {
    dbId: "aviation",
    entities: [airline, flight],
    relations: [{ child: flight, parent: airline, foreignKey: "airline_id" }],
    rows: { airline: 8, flight: 50 },
  },
];

const DEPARTMENTS = ["Biology", "History", "Physics", "Music", "Economics", "Chemistry", "Linguistics", "Geology"];
const TOPICS = [
  "Cells",
  "Empires",
  "Waves",
  "Harmony",
  "Markets",
  "Bonds",
  "Syntax",
  "Rocks",
  "Stars",
  "Rivers",
  "Cities",
  "Machines",
  "Forests",
  "Islands",
  "Signals",
  "Storms",
];
const AIRLINES = [
  "Tagus Air",
  "Fjord Wings",
  "Sakura Jet",
  "Savanna Airways",
  "Andes Connect",
  "Polar Express Air",
  "Coral Sky",
  "Meridian",
];

/** `count` distinct values drawn with `make(i)` until unique (names, titles, codes). */
function distinct(count: number, rng: Prng, make: (rng: Prng) => string): string[] {
  const seen = new Set<string>();
  while (seen.size < count) seen.add(make(rng));
  return [...seen];
}

/** The text that names each row of `entity` (unique within the table). */
function rowNames(e: Entity, count: number, rng: Prng): string[] {
  switch (e.table) {
    case "department":
      return DEPARTMENTS.slice(0, count);
    case "airline":
      return AIRLINES.slice(0, count);
    case "course":
    case "book":
      return distinct(
        count,
        rng,
        (r) => `${r.pick(["Introduction to", "Notes on", "The", "On", "A Study of"])} ${r.pick(TOPICS)}`,
      );
    case "purchase":
      return Array.from({ length: count }, (_, i) => `P-${1001 + i}`);
    case "flight":
      return distinct(count, rng, (r) => `${r.pick(["TA", "FW", "SJ", "SV", "AC"])}${r.int(100, 999)}`);
    default:
      return distinct(count, rng, (r) => `${r.pick(FIRST)} ${r.pick(LAST)}`);
  }
}

/** A number for `column`, in the range a reader would expect of it. */
function numberValue(column: string, rng: Prng): number {
  const ranges: Record<string, [number, number]> = {
    budget: [50_000, 900_000],
    salary: [40_000, 160_000],
    hire_year: [1990, 2024],
    credits: [1, 6],
    enrollment: [8, 240],
    credit_limit: [1_000, 50_000],
    quantity: [1, 20],
    birth_year: [1900, 1995],
    pages: [80, 900],
    founded: [1930, 2015],
    distance: [200, 9_000],
  };
  if (column === "amount" || column === "price") return Math.round(rng.int(500, 250_000)) / 100;
  if (column === "rating") return rng.int(10, 50) / 10;
  const [min, max] = ranges[column] ?? [0, 100];
  return rng.int(min, max);
}

/**
 * The rows of one table: `id` from 1, the name column, numbers, categories, the nullable column (NULL for about a
 * third of rows), and each foreign key pointing to a random parent row.
 * @param domain - the table's domain (for its foreign keys and row counts)
 * @param e - the table
 * @param rng - the generator's random source
 * @returns one object per row, columns in {@link columnsOf} order
 */
export function generateRows(domain: Domain, e: Entity, rng: Prng): Record<string, string | number | null>[] {
  const count = domain.rows[e.table] ?? 10;
  const names = rowNames(e, count, rng);
  const keys = domain.relations.filter((r) => r.child === e);
  return names.map((name, i) => {
    const row: Record<string, string | number | null> = { id: i + 1, [e.nameColumn]: name };
    for (const k of keys) row[k.foreignKey] = rng.int(1, domain.rows[k.parent.table] ?? 1);
    for (const n of e.numbers) row[n.column] = numberValue(n.column, rng);
    for (const c of e.categories) row[c.column] = rng.pick(c.values);
    if (e.nullable) row[e.nullable.column] = rng.next() < 0.35 ? null : `${e.nullable.column}-${rng.int(1000, 9999)}`;
    return row;
  });
}

/** The columns of a table in order, with their SQLite and Spider types (`number` / `text`). */
export function columnsOf(domain: Domain, e: Entity): { name: string; sqlType: string; spiderType: string }[] {
  return [
    { name: "id", sqlType: "INTEGER PRIMARY KEY", spiderType: "number" },
    { name: e.nameColumn, sqlType: "TEXT NOT NULL", spiderType: "text" },
    ...domain.relations
      .filter((r) => r.child === e)
      .map((r) => ({
        name: r.foreignKey,
        sqlType: `INTEGER NOT NULL REFERENCES ${r.parent.table}(id)`,
        spiderType: "number",
      })),
    ...e.numbers.map((n) => ({ name: n.column, sqlType: n.real ? "REAL" : "INTEGER", spiderType: "number" })),
    ...e.categories.map((c) => ({ name: c.column, sqlType: "TEXT", spiderType: "text" })),
    ...(e.nullable ? [{ name: e.nullable.column, sqlType: "TEXT", spiderType: "text" }] : []),
  ];
}
