// The judge of a GRPO job's score_model graders, in the job's training process
// (docs/graders.md#score_model-in-a-grpo-job): the job runner resolves each
// judge's model to folders (grpo-judges.ts) and the process generates with the
// engine as the inference service would, under JUDGE_GRAMMAR, at the grader's
// sampling_params (temperature 0 by default). Memory: a judge on the job's own
// base model (with or without an adapter) shares the base weights the process
// already holds for the policy, adding only its adapter and a generator's KV
// caches; a judge on another base is loaded once, at its first grade, and kept
// for the job. Judging never reads the policy's adapter: a judge's adapter is
// its own copy, frozen.
import {
  createGenerator,
  type Generator,
  type LoraAdapter,
  loadAdapter,
  loadModel,
  type Model,
} from "@svc/engine";
import { JUDGE_GRAMMAR, type Judge, type ScoreModelGrader } from "../graders/score-model.js";
import type { JudgeModel } from "./training-protocol.js";

/** Most judge prompts decoded together. */
const JUDGE_BATCH = 8;

/**
 * policy: the engine model this process trains, whose weights a judge on the same base shares; null in
 * the torch backend's process, which holds no engine model (each judge's model is loaded at its first grade).
 */
export function trainingJudge(
  policy: { model: Model; dir: string } | null,
  judges: readonly JudgeModel[],
): Judge {
  const generators = new Map<string, Promise<Generator>>();
  const adapters = new Map<string, LoraAdapter>();
  const generatorFor = (modelDir: string): Promise<Generator> => {
    let generator = generators.get(modelDir);
    if (!generator) {
      generator = (modelDir === policy?.dir ? Promise.resolve(policy.model) : loadModel(modelDir)).then(
        (model) => createGenerator(model, { maxBatch: JUDGE_BATCH }),
      );
      generators.set(modelDir, generator);
    }
    return generator;
  };
  const adapterFor = (dir: string): LoraAdapter => {
    let adapter = adapters.get(dir);
    if (!adapter) {
      adapter = loadAdapter(dir);
      adapters.set(dir, adapter);
    }
    return adapter;
  };
  return async (grader: ScoreModelGrader, messages) => {
    const judge = judges.find((j) => j.model === grader.model);
    if (!judge) throw new Error(`the judge model ${grader.model} was not resolved for this job`);
    const generator = await generatorFor(judge.modelDir);
    const sampling = grader.sampling_params ?? {};
    const iterator = generator.generate({
      messages,
      adapter: judge.adapterDir ? adapterFor(judge.adapterDir) : null,
      temperature: sampling.temperature ?? 0,
      ...(sampling.top_p !== undefined ? { topP: sampling.top_p } : {}),
      ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
      maxTokens: sampling.max_completions_tokens ?? 64,
      grammar: JUDGE_GRAMMAR,
    });
    for (;;) {
      const next = await iterator.next();
      if (next.done) return next.value.text;
    }
  };
}
