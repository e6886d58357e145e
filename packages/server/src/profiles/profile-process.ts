// Profiles one dataset in a child process of the server (forked by
// DatasetProfiler): tokenizing a large file takes seconds to minutes of CPU,
// which must never hold up the server's event loop. Runs at a lower priority,
// so requests and training go first, on the engine's worker threads.
import { setPriority } from "node:os";
import { profileDatasetFile } from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
import type {
  ProfileProcessCommand,
  ProfileProcessInput,
  ProfileProcessMessage,
} from "./profile-protocol.js";

exitWithParent();
try {
  // Threads made after this (the engine's workers) inherit the niceness.
  setPriority(10);
} catch {
  // Not allowed here: run at the usual priority.
}

/** Sends a message and resolves once it is handed to the IPC channel. */
const post = (message: ProfileProcessMessage) =>
  new Promise<void>((resolve) => {
    if (!process.send?.(message, undefined, {}, () => resolve())) resolve();
  });

const input = await new Promise<ProfileProcessInput>((resolve) => {
  process.once("message", (command: ProfileProcessCommand) => resolve(command.input));
});

let lastProgress = 0;
try {
  const profile = await profileDatasetFile(input.path, input.modelDir, {
    source: input.name,
    onProgress: (rowsDone, rows) => {
      const now = Date.now();
      if (now - lastProgress < 250) return;
      lastProgress = now;
      void post({ type: "progress", rowsDone, rows });
    },
  });
  await post({ type: "result", profile });
} catch (error) {
  await post({ type: "error", message: (error as Error).message ?? String(error) });
}
// The IPC channel would keep this process alive; the work is done.
process.disconnect();
