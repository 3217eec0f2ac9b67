// Type-checks Grafana dashboard JSON files against Grafana's own `Dashboard` type (@grafana/schema, the types
// Grafana's frontend compiles against) with the TypeScript compiler: each file becomes an object literal of that
// type, so a wrong type, a wrong enum value and (excess-property checks) an unknown key are all errors.
// Usage: node check.mjs DASHBOARD.json ... -> prints {"results": [{"file", "errors": [...]}]}.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ts = require("typescript");
const here = path.dirname(new URL(import.meta.url).pathname);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "grafanacheck-"));
const sources = process.argv.slice(2).map((file, i) => {
  const source = path.join(work, `dashboard${i}.ts`);
  const text = fs.readFileSync(file, "utf8");
  fs.writeFileSync(source, `import type { Dashboard } from "@grafana/schema";\n` +
    `export const dashboard: Dashboard = ${text};\n`);
  return { file, source };
});
const program = ts.createProgram(sources.map((s) => s.source), {
  strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022,
  typeRoots: [], types: [], baseUrl: here, paths: { "@grafana/schema": [path.join(here, "node_modules/@grafana/schema")] },
});
const results = sources.map(({ file, source }) => {
  const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(source));
  return { file, errors: diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")) };
});
fs.rmSync(work, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ results }) + "\n");
