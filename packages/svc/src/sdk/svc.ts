// createSvc(): the project manifest. A project has exactly one trainer; the
// CLI and Studio read it from the default (or `svc`) export of src/svc/index.ts.
import type { Trainer } from "./trainer.js";

export interface SvcManifest {
  readonly trainer: Trainer;
}

export function createSvc(config: { trainer: Trainer }): SvcManifest {
  if (!config || typeof config !== "object") throw new TypeError("createSvc: expected { trainer }");
  if (Array.isArray(config.trainer)) {
    throw new TypeError(
      "createSvc: trainer: a project has exactly one trainer; pass one createTrainer(...) result",
    );
  }
  const t = config.trainer as Partial<Trainer> | undefined;
  if (!t || typeof t.name !== "string" || typeof t.start !== "function" || typeof t.wait !== "function") {
    throw new TypeError("createSvc: trainer: expected the result of createTrainer(...)");
  }
  const extra = Object.keys(config).filter((k) => k !== "trainer");
  if (extra.length > 0)
    throw new TypeError(`createSvc: unknown field ${extra.map((k) => JSON.stringify(k)).join(", ")}`);
  return Object.freeze({ trainer: config.trainer });
}
