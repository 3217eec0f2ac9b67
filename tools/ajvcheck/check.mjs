// node check.mjs SCHEMA.json DOCUMENT.json...
// Compiles the schema with ajv's draft 2020-12 class in strict mode (unknown keywords and formats are errors), with
// unicode regular expressions as JSON Schema specifies, then validates each document. Prints one JSON object on
// stdout: {"compiled": true, "results": [{"file", "valid", "errors"}]} or {"compiled": false, "error"}.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const [schemaPath, ...documents] = process.argv.slice(2);
if (!schemaPath) {
  process.stderr.write("usage: node check.mjs SCHEMA.json DOCUMENT.json...\n");
  process.exit(2);
}
const ajv = new Ajv2020({ strict: true, allErrors: true, unicodeRegExp: true, validateFormats: false });
let validate;
try {
  validate = ajv.compile(JSON.parse(readFileSync(schemaPath, "utf8")));
} catch (error) {
  process.stdout.write(JSON.stringify({ compiled: false, error: String(error.message) }) + "\n");
  process.exit(1);
}
const results = documents.map((file) => {
  const valid = validate(JSON.parse(readFileSync(file, "utf8")));
  return { file, valid, errors: (validate.errors || []).map((e) => `${e.instancePath || "(file)"}: ${e.message}`) };
});
process.stdout.write(JSON.stringify({ compiled: true, results }) + "\n");
process.exit(results.every((r) => r.valid) ? 0 : 1);
