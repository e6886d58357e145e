// @svc/wire: the contract between svc's packages (docs/architecture.md). The
// cloud API's (/v1) bodies, the job event stream, and the rules both sides
// check. It depends on nothing: the server, the SDK (packages/svc) and Studio
// import it; it imports none of them, nor the engine.

export * from "./base-models.js";
export * from "./common.js";
export * from "./dataset-profiles.js";
export * from "./datasets.js";
export * from "./deployments.js";
export * from "./exports.js";
export * from "./identity.js";
export * from "./inference.js";
export * from "./job-event-types.js";
export * from "./job-events.js";
export * from "./jobs.js";
export * from "./limits.js";
export * from "./model-pulls.js";
export * from "./precision.js";
export * from "./project-keys.js";
export * from "./routes.js";
export * from "./rules.js";
export * from "./scoring.js";
export * from "./studio.js";
export * from "./tools.js";
