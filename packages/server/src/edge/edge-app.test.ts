import assert from "node:assert/strict";
import { it } from "node:test";
import { slugFromHost } from "./edge-app.js";

it("reads the deployment slug from Host <slug>.<deployment domain>", () => {
  assert.equal(slugFromHost("my-bot.localhost:4200", "localhost:4200"), "my-bot");
  assert.equal(slugFromHost("MY-BOT.LOCALHOST:4200", "localhost:4200"), "my-bot");
  assert.equal(slugFromHost("my-bot.svc.example.com", "svc.example.com"), "my-bot");
  assert.equal(slugFromHost("localhost:4200", "localhost:4200"), null);
  assert.equal(slugFromHost("a.b.localhost:4200", "localhost:4200"), null);
  assert.equal(slugFromHost("my-bot.elsewhere.com", "localhost:4200"), null);
  assert.equal(slugFromHost(undefined, "localhost:4200"), null);
});
