// Model repo folders for the loopback Hub (hub-server.ts), made from the
// engine's committed tiny Qwen3 fixture: as published, sharded, and
// oversized (a config alone, whose model cannot fit in any test machine).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** packages/engine/fixtures/qwen3-v5-bf16, from packages/server/dist/test/. */
const QWEN3_FIXTURE = join(dirname(fileURLToPath(import.meta.url)), "../../../engine/fixtures/qwen3-v5-bf16");

/** The fixture's model files, plus files svc must never fetch (pickled weights, another runtime's copy). */
export function qwen3Repo(dir: string): string {
  mkdirSync(join(dir, "onnx"), { recursive: true });
  for (const file of ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"])
    copyFileSync(join(QWEN3_FIXTURE, file), join(dir, file));
  writeFileSync(join(dir, "pytorch_model.bin"), Buffer.alloc(20_000, 7));
  writeFileSync(join(dir, "onnx", "model.onnx"), Buffer.alloc(12_000, 3));
  writeFileSync(join(dir, "README.md"), "# A tiny Qwen3 for tests\n");
  return dir;
}

/** The same model with its weights in two shards and model.safetensors.index.json, as large checkpoints are published. */
export function shardedQwen3Repo(dir: string): string {
  qwen3Repo(dir);
  const bytes = readFileSync(join(dir, "model.safetensors"));
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString()) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const data = bytes.subarray(8 + headerLength);
  const names = Object.keys(header).filter((n) => n !== "__metadata__");
  const halves = [names.slice(0, Math.ceil(names.length / 2)), names.slice(Math.ceil(names.length / 2))];
  const weightMap: Record<string, string> = {};
  halves.forEach((shardNames, i) => {
    const file = `model-0000${i + 1}-of-00002.safetensors`;
    const shardHeader: Record<string, unknown> = {};
    const parts: Buffer[] = [];
    let offset = 0;
    for (const name of shardNames) {
      const entry = header[name]!;
      const part = data.subarray(entry.data_offsets[0], entry.data_offsets[1]);
      shardHeader[name] = {
        dtype: entry.dtype,
        shape: entry.shape,
        data_offsets: [offset, offset + part.length],
      };
      parts.push(part);
      offset += part.length;
      weightMap[name] = file;
    }
    let json = JSON.stringify(shardHeader);
    json += " ".repeat((8 - (json.length % 8)) % 8);
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(json.length));
    writeFileSync(join(dir, file), Buffer.concat([length, Buffer.from(json), ...parts]));
  });
  writeFileSync(
    join(dir, "model.safetensors.index.json"),
    JSON.stringify({ metadata: { total_size: data.length }, weight_map: weightMap }, null, 2),
  );
  // As a sharded repo has it: no single-file copy.
  rmSync(join(dir, "model.safetensors"));
  return dir;
}

/** A Qwen3 config of about 140 billion parameters: the config alone, which is all svc reads before refusing it. */
export function hugeQwen3Repo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const config = JSON.parse(readFileSync(join(QWEN3_FIXTURE, "config.json"), "utf8")) as Record<
    string,
    unknown
  >;
  Object.assign(config, {
    hidden_size: 12288,
    intermediate_size: 49152,
    num_hidden_layers: 80,
    num_attention_heads: 96,
    num_key_value_heads: 8,
    head_dim: 128,
    vocab_size: 151936,
    layer_types: Array.from({ length: 80 }, () => "full_attention"),
    max_window_layers: 80,
  });
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2));
  return dir;
}
