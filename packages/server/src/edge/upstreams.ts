// The external OpenAI-compatible servers (vLLM, the llama.cpp server, another
// svc edge) that this server's operator declared with --upstream name=url.
// Deployments name one of them; tenants never supply a URL, so a deployment
// cannot point the server at an address the operator did not choose, and the
// upstream's API key (SVC_UPSTREAM_KEY_<NAME>) never leaves the server.

export interface Upstream {
  name: string;
  /** The OpenAI base URL, ending in /v1 as a client would be given it. */
  baseUrl: string;
  apiKey: string | null;
}

export const UPSTREAM_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,39}$/;

/** The environment variable holding an upstream's API key: SVC_UPSTREAM_KEY_ then the name in upper case, "-" as "_". */
export const upstreamKeyVariable = (name: string) =>
  `SVC_UPSTREAM_KEY_${name.toUpperCase().replaceAll("-", "_")}`;

/**
 * Parses `name=url` specs; throws an Error naming the bad spec. The key of each
 * comes from `env` (see upstreamKeyVariable).
 */
export function parseUpstreams(specs: string[], env: NodeJS.ProcessEnv = process.env): Upstream[] {
  const seen = new Set<string>();
  return specs.map((spec) => {
    const at = spec.indexOf("=");
    const name = spec.slice(0, Math.max(0, at)).trim();
    const url = spec.slice(at + 1).trim();
    if (at <= 0 || !UPSTREAM_NAME_PATTERN.test(name))
      throw new Error(`--upstream must be <name>=<base url> with a name of a-z, 0-9 and "-" (got ${spec})`);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`--upstream ${name}: ${JSON.stringify(url)} is not a URL`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw new Error(`--upstream ${name}: the URL must be http or https (got ${parsed.protocol})`);
    if (seen.has(name)) throw new Error(`--upstream ${name} is given twice`);
    seen.add(name);
    return { name, baseUrl: url.replace(/\/+$/, ""), apiKey: env[upstreamKeyVariable(name)] || null };
  });
}

export class UpstreamRegistry {
  private readonly byName: Map<string, Upstream>;

  constructor(upstreams: Upstream[]) {
    this.byName = new Map(upstreams.map((u) => [u.name, u]));
  }

  get(name: string): Upstream | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()].sort();
  }
}
