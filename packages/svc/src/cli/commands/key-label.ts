// The --label of an issued key, deployment or project: 1 to KEY_LABEL_MAX_LENGTH characters.
import { KEY_LABEL_MAX_LENGTH, textLength } from "@svc/wire";
import { type Parsed, stringOption, UsageError } from "../args.js";

export function requireLabel(values: Parsed["values"]): string {
  const label = stringOption(values, "label");
  if (!label || textLength(label) > KEY_LABEL_MAX_LENGTH) {
    throw new UsageError(`--label: required, 1 to ${KEY_LABEL_MAX_LENGTH} characters`);
  }
  return label;
}
