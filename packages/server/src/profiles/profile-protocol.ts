// Messages between the server and a dataset profile process.
import type { DatasetProfile } from "@svc/engine";

export interface ProfileProcessInput {
  /** The stored JSONL file. */
  path: string;
  /** The dataset's name, for errors ("train.jsonl row 12: ..."). */
  name: string;
  modelDir: string;
}

export type ProfileProcessCommand = { type: "start"; input: ProfileProcessInput };

export type ProfileProcessMessage =
  | { type: "progress"; rowsDone: number; rows: number }
  | { type: "result"; profile: DatasetProfile }
  | { type: "error"; message: string };
