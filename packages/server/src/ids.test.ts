import assert from "node:assert/strict";
import { it } from "node:test";
import { randomBase62, sha256Hex, UUID_PATTERN, uuidv7 } from "./ids.js";

it("makes UUIDv7 ids that sort in creation order", () => {
  const ids = Array.from({ length: 2000 }, () => uuidv7());
  for (const id of ids) assert.match(id, UUID_PATTERN);
  assert.equal(ids[0][14], "7");
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
});

it("makes base62 secrets of the asked length and hashes them", () => {
  const secret = randomBase62(40);
  assert.match(secret, /^[0-9A-Za-z]{40}$/);
  assert.notEqual(randomBase62(40), secret);
  assert.equal(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});
