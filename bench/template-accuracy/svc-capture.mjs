// Stands in for the "svc" SDK when a template's src/svc/index.ts is bundled
// here: createTrainer keeps the options instead of submitting a job. They are
// checked by the SDK's own validator, so a template that `svc start` would
// refuse is refused here too.
import { validateTrainerOptions } from "../../packages/svc/dist/src/sdk/trainer-options.js";

export function createTrainer(options) {
  validateTrainerOptions(options);
  return { name: options.name, model: options.model, options };
}

export function createSvc(config) {
  return config;
}
