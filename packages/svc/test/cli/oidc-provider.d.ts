// The slice of the `oidc-provider` library (which ships no types) that the
// login tests use.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  interface Configuration {
    clients?: Record<string, unknown>[];
    claims?: Record<string, string[]>;
    findAccount?(ctx: unknown, id: string): Promise<Account | undefined>;
    conformIdTokenClaims?: boolean;
    features?: Record<string, unknown>;
    cookies?: { keys?: string[] };
    ttl?: Record<string, number>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
