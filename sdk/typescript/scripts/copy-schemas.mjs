// copy-schemas.mjs copies the project's JSON Schemas (schemas/json) into the
// package, so a packed and installed SDK validates with the same schemas the
// Go side uses. The copy is made at build time and not checked in.
import { cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const from = join(here, "..", "..", "..", "schemas", "json");
const to = join(here, "..", "schemas");
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (p) => !p.endsWith(".go") });
