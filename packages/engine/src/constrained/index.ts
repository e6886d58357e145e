// Grammar-constrained decoding: the public part (the grammar a request may
// carry, and the schema check the server runs before generating).
export { type JsonSchema, type OutputGrammar, SchemaError } from "./grammar.js";
export { checkJsonSchema, compileSchemaSteps } from "./schema.js";
export { MAX_ENUM_VALUES, MAX_SUBSCHEMAS, newSchemaBudget, type SchemaBudget } from "./schema-budget.js";
export { schemaMismatch } from "./schema-value.js";
export { finishInSlices } from "./steps.js";
