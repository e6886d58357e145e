// Grammar work done a small piece at a time. Compiling a large schema or
// walking the vocabulary for one state's allowed tokens can take long enough
// to hold up every other generation of the process, so that work is written
// as generator functions that yield between small pieces (a subschema, a
// trie node): the Generator's scheduler runs them a few milliseconds per
// turn between decode steps, the server's schema check runs them in slices
// between other requests, and synchronous callers run them to the end at once.

/** Work that yields between small pieces and returns a T. */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to the end at once. */
export function finish<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/**
 * One piece of grammar work that several sequences may wait for (the same
 * schema compiled, the same state's allowed tokens): whoever runs it advances
 * it; its result, or the error it threw, stays for every waiter.
 */
export class SharedWork<T> {
  private steps: Steps<T> | null;
  private value: T | undefined;
  private failure: { error: unknown } | null = null;

  constructor(steps: Steps<T> | null, value?: T) {
    this.steps = steps;
    this.value = value;
  }

  /** Work already done: its result is `value`. */
  static of<T>(value: T): SharedWork<T> {
    return new SharedWork<T>(null, value);
  }

  get done(): boolean {
    return this.steps === null;
  }

  /** Whether it is done and threw. */
  get failed(): boolean {
    return this.failure !== null;
  }

  /** The result; throws the work's error (only once done). */
  get result(): T {
    if (this.steps !== null) throw new Error("grammar work: result asked for before it finished");
    if (this.failure) throw this.failure.error;
    return this.value as T;
  }

  /** Advances the work until it finishes or `performance.now()` passes `deadline`; returns whether it is done. */
  runUntil(deadline: number): boolean {
    const steps = this.steps;
    if (steps === null) return true;
    try {
      for (;;) {
        const next = steps.next();
        if (next.done) {
          this.value = next.value;
          break;
        }
        if (performance.now() >= deadline) return false;
      }
    } catch (error) {
      this.failure = { error };
    }
    this.steps = null;
    return true;
  }
}

/**
 * Runs `steps` to the end in pieces of about `sliceMs`, letting the event loop
 * run between them (an API server checking a request's schema while it
 * answers others).
 */
export async function finishInSlices<T>(steps: Steps<T>, sliceMs = 4): Promise<T> {
  const work = new SharedWork(steps);
  while (!work.runUntil(performance.now() + sliceMs)) await new Promise((resolve) => setImmediate(resolve));
  return work.result;
}

/** Runs shared work to the end at once and returns its result (or throws its error). */
export function finishWork<T>(work: SharedWork<T>): T {
  work.runUntil(Number.POSITIVE_INFINITY);
  return work.result;
}

/** Waits for shared work by running it one piece per yield (inside other work). */
export function* waitFor<T>(work: SharedWork<T>): Steps<T> {
  while (!work.runUntil(Number.NEGATIVE_INFINITY)) yield;
  return work.result;
}
