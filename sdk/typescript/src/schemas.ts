// schemas.ts: validation against the project's JSON Schemas (schemas/json,
// copied into the package at build time) and against an agent's own
// contract (params schema, declared data types).

import { readFileSync, readdirSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

import type { AgentContractDataType } from "./types.gen.js";

const here = dirname(fileURLToPath(import.meta.url));
// ajv-formats is CommonJS; its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => void;

/** defaultSchemaDir is the package's copy of schemas/json (or AGENTMESH_SCHEMAS). */
export function defaultSchemaDir(): string {
  if (process.env.AGENTMESH_SCHEMAS) return process.env.AGENTMESH_SCHEMAS;
  for (const d of [join(here, "..", "..", "schemas"), join(here, "..", "schemas")]) if (existsSync(join(d, "task.schema.json"))) return d;
  throw new Error("the JSON Schemas of the mesh are not in the package: run `npm run build` in sdk/typescript, or set AGENTMESH_SCHEMAS to schemas/json");
}

/** Schemas validates documents by the names the Go side uses: "task", "result", "types/TEXT". */
export class Schemas {
  private readonly ajv: Ajv2020;
  private readonly base: string;
  private readonly shipped = new Set<string>();

  constructor(dir: string = defaultSchemaDir()) {
    this.ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(this.ajv);
    let base = "";
    for (const sub of ["", "types"]) {
      for (const f of readdirSync(join(dir, sub)).sort()) {
        if (!f.endsWith(".schema.json")) continue;
        const doc = JSON.parse(readFileSync(join(dir, sub, f), "utf8"));
        this.ajv.addSchema(doc);
        if (sub === "types") this.shipped.add(f.slice(0, -".schema.json".length));
        if (!base && sub === "") base = doc.$id.slice(0, doc.$id.lastIndexOf("/") + 1);
      }
    }
    this.base = base;
  }

  /** validate returns "field: problem" strings, none when doc is valid. */
  validate(name: string, doc: unknown): string[] {
    const v = this.ajv.getSchema(`${this.base}${name}.schema.json`);
    if (!v) return [`no schema called ${name}`];
    return v(doc) ? [] : problems(v);
  }

  /** declare adds the schema of a data type an agent declares (data_types). */
  declare(def: AgentContractDataType): void {
    const id = `${this.base}types/${def.name}.schema.json`;
    if (this.ajv.getSchema(id)) return;
    this.ajv.addSchema((def.schema === undefined ? true : def.schema) as object, id);
  }

  /** builtIn tells whether a data type is one of the shipped ones (schemas/json/types). */
  builtIn(dataType: string): boolean {
    return this.shipped.has(dataType);
  }

  /** hasType tells whether a data type has a schema here (built in or declared). */
  hasType(dataType: string): boolean {
    return !!this.ajv.getSchema(`${this.base}types/${dataType}.schema.json`);
  }

  /** compile compiles a free-standing schema, a contract's params. */
  compile(schema: object): ValidateFunction {
    return this.ajv.compile(schema);
  }
}

export function problems(v: ValidateFunction): string[] {
  return (v.errors || []).map((e) => `${e.instancePath || "(document)"}: ${e.message}`);
}
