// The bytes each token adds to the generated text, read from the tokenizer's
// vocabulary and decoder (tokenizer.json), so a grammar can be matched byte by
// byte even where a token holds part of a multi-byte UTF-8 character:
//
// - ByteLevel decoders (GPT-2, Llama 3, Qwen, SmolLM2, the bundled model): each
//   character of a vocabulary entry stands for one byte (GPT-2's byte table).
// - SentencePiece-style decoders (Replace "▁" → " ", ByteFallback "<0xHH>",
//   Metaspace): the entry's text with the replacement applied, or the one byte.
//
// Special tokens have no bytes (null): generation under a grammar never writes
// them, except end-of-sequence where the text is complete.

export interface TokenVocabularySource {
  vocabSize: number;
  /** The vocabulary entry of an id (undefined where the vocabulary has none). */
  idToToken(id: number): string | undefined;
  /** Added tokens: id → content and whether special. */
  addedTokens: Map<number, { content: string; special: boolean }>;
  /** tokenizer.json's "decoder" object. */
  decoder: unknown;
}

/** GPT-2's reversible byte → printable character table used by ByteLevel tokenizers. */
function byteLevelTable(): Map<number, number> {
  const charToByte = new Map<number, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    charToByte.set(printable ? b : 256 + extra++, b);
  }
  return charToByte;
}

interface DecoderSteps {
  byteLevel: boolean;
  byteFallback: boolean;
  replacements: [string, string][];
  unsupported: string | null;
}

function decoderSteps(decoder: unknown): DecoderSteps {
  const steps: DecoderSteps = { byteLevel: false, byteFallback: false, replacements: [], unsupported: null };
  const visit = (config: unknown): void => {
    if (typeof config !== "object" || config === null) return;
    const d = config as Record<string, unknown>;
    switch (d.type) {
      case "Sequence":
        for (const inner of (d.decoders as unknown[]) ?? []) visit(inner);
        return;
      case "ByteLevel":
        steps.byteLevel = true;
        return;
      case "ByteFallback":
        steps.byteFallback = true;
        return;
      case "Replace": {
        const pattern = (d.pattern as Record<string, unknown>)?.String;
        if (typeof pattern === "string" && typeof d.content === "string")
          steps.replacements.push([pattern, d.content]);
        else steps.unsupported = "Replace with a regex pattern";
        return;
      }
      case "Metaspace": {
        const replacement = typeof d.replacement === "string" ? d.replacement : "▁";
        steps.replacements.push([replacement, " "]);
        return;
      }
      case "Fuse":
      case "Strip": // strips the very first space of a whole text only
        return;
      default:
        steps.unsupported = String(d.type);
    }
  };
  visit(decoder);
  return steps;
}

const encoder = new TextEncoder();

/**
 * Each id's bytes (null: special, unknown, or not representable), or a
 * reason why this tokenizer's decoder is not understood.
 */
export function tokenBytesTable(source: TokenVocabularySource): (Uint8Array | null)[] | string {
  const steps = decoderSteps(source.decoder);
  if (source.decoder === null || source.decoder === undefined) steps.unsupported = "no decoder";
  if (steps.unsupported !== null)
    return `the tokenizer's decoder (${steps.unsupported}) is not supported for constrained decoding`;
  const charToByte = steps.byteLevel ? byteLevelTable() : null;
  const table = new Array<Uint8Array | null>(source.vocabSize).fill(null);
  for (let id = 0; id < source.vocabSize; id++) {
    const added = source.addedTokens.get(id);
    if (added) {
      table[id] = added.special ? null : encoder.encode(added.content);
      continue;
    }
    const token = source.idToToken(id);
    if (token === undefined || token.length === 0) continue;
    if (charToByte) {
      const bytes: number[] = [];
      for (const ch of token) {
        const b = charToByte.get(ch.codePointAt(0)!);
        if (b === undefined) break;
        bytes.push(b);
      }
      if (bytes.length === [...token].length) table[id] = Uint8Array.from(bytes);
      continue;
    }
    const fallback = steps.byteFallback ? /^<0x([0-9A-Fa-f]{2})>$/.exec(token) : null;
    if (fallback) {
      table[id] = Uint8Array.of(Number.parseInt(fallback[1], 16));
      continue;
    }
    let text = token;
    for (const [from, to] of steps.replacements) text = text.split(from).join(to);
    table[id] = encoder.encode(text);
  }
  return table;
}
