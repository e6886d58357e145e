// How grading a sample can fail. A GradeError fails the sample: it is never
// scored (the run route answers 400 with its code and param; a job does not
// train on it). A SampleParseError is the completion's own failure to be what
// the grader reads (not JSON, a key missing from its JSON): it grades 0 with
// errors.sample_parse_error set, as OpenAI scores such a sample.

export type GradeErrorCode = "invalid_variable" | "invalid_reward" | "sample_too_large";

export class GradeError extends Error {
  constructor(
    readonly code: GradeErrorCode,
    /** The request field at fault ("item", "grader.calculate_output", "model_sample"). */
    readonly param: string,
    message: string,
  ) {
    super(message);
    this.name = "GradeError";
  }
}

export class SampleParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SampleParseError";
  }
}
