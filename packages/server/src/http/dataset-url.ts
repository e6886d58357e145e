// Fetching a dataset from a tenant's URL without letting the URL reach inside
// the server's network (SSRF):
// - only http(s);
// - the host name is resolved once, every address it resolves to must be
//   public (public-address.ts), and the connection goes to that checked
//   address (a custom lookup), so a DNS answer that changes between the check
//   and the connect (rebinding) cannot redirect it;
// - redirects are followed by hand, each hop checked again, at most
//   MAX_REDIRECTS of them; the tenant's token goes only to the URL's own origin;
// - hosts the operator allows (--dataset-url-allow "host" for every port,
//   "host:port" for one) skip the address check;
// - the server's own API and edge ports on any address of this machine are
//   never reached, allowed or not: a redirect to them would make the server
//   call itself with the tenant's request;
// - every failure to reach a host reads the same (refused address, unknown
//   name, closed port, timeout), and no error quotes what the host sent.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIPv6, type LookupFunction } from "node:net";
import { networkInterfaces } from "node:os";
import { ApiError, badRequest } from "./api-error.js";
import { isPublicAddress } from "./public-address.js";

export const MAX_REDIRECTS = 5;
/** How long a host may stay silent (connecting, before the answer, between body chunks). */
const IDLE_TIMEOUT_MS = 30_000;
/** How long a whole download may take, so a host trickling bytes cannot hold a request forever. */
const TOTAL_TIMEOUT_MS = 5 * 60_000;

const unreachable = () =>
  badRequest(
    `"url": the dataset could not be fetched: the host is not reachable from this server, or not allowed`,
    "dataset_fetch_failed",
  );
const tooLarge = (limit: number) =>
  new ApiError(413, "payload_too_large", `"url": the dataset exceeds ${limit} bytes`);

/** The host as the allow-list and the resolver see it: lower case, IPv6 without brackets. */
function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
}

/** An allow entry for a host on one port, as the allow-list holds it: "host:port", "[v6]:port". */
const withPort = (host: string, port: number) => `${isIPv6(host) ? `[${host}]` : host}:${port}`;

/**
 * Parses the operator's allow-list ("host,host:port"): each entry a host
 * (every port) or a host and a port (that port only), as URL parsing would
 * write the host. An IPv6 address with a port is bracketed: "[fd00::1]:8080".
 */
export function parseAllowedHosts(entries: readonly string[]): string[] {
  return entries
    .flatMap((entry) => entry.split(","))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const bare = entry.replace(/^\[(.*)\]$/, "$1");
      if (isIPv6(bare)) return hostOf(new URL(`http://[${bare}]/`));
      const [, host, port] = /^(.*?)(?::([^:]*))?$/.exec(entry)!;
      if (
        /[/?#@]/.test(entry) ||
        (port !== undefined && !/^[1-9][0-9]{0,4}$/.test(port)) ||
        Number(port) > 65_535
      )
        throw new Error(
          `--dataset-url-allow: "${entry}" must be a host or host:port with a port from 1 to 65535 (no path)`,
        );
      let url: URL;
      try {
        url = new URL(`http://${host}/`);
      } catch {
        throw new Error(`--dataset-url-allow: "${entry}" is not a host name or address`);
      }
      return port === undefined ? hostOf(url) : withPort(hostOf(url), Number(port));
    });
}

/** The port a URL connects to. */
const portOf = (url: URL) => (url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80);

/** Whether the operator allows this URL's host, on every port or on this one. */
function isAllowed(url: URL, allowed: readonly string[]): boolean {
  const host = hostOf(url);
  return allowed.includes(host) || allowed.includes(withPort(host, portOf(url)));
}

/** True for an address that reaches this machine: loopback, unspecified, or one of its interfaces'. */
function isOwnMachine(address: string): boolean {
  const bare = address.toLowerCase().replace(/^::ffff:/, "");
  if (/^127\./.test(bare) || bare === "::1" || bare === "0.0.0.0" || bare === "::") return true;
  return Object.values(networkInterfaces()).some((list) =>
    (list ?? []).some((i) => i.address.toLowerCase() === bare),
  );
}

/**
 * How the fetcher resolves names and judges addresses: DNS and public-address.ts.
 * A test injects its own to change the DNS answer between check and connect.
 */
export interface DatasetUrlNetwork {
  lookup(host: string): Promise<LookupAddress[]>;
  isPublicAddress(address: string): boolean;
}

const systemNetwork: DatasetUrlNetwork = {
  lookup: (host) =>
    new Promise((resolve, reject) =>
      dnsLookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
    ),
  isPublicAddress,
};

interface FetchRules {
  allowedHosts: readonly string[];
  ownPorts: readonly number[];
  network: DatasetUrlNetwork;
}

/** Resolves the URL's host and checks it; the address the connection must use. */
async function checkedAddress(url: URL, rules: FetchRules): Promise<LookupAddress> {
  if (url.protocol !== "http:" && url.protocol !== "https:") throw unreachable();
  let addresses: LookupAddress[];
  try {
    addresses = await rules.network.lookup(hostOf(url));
  } catch {
    throw unreachable();
  }
  if (addresses.length === 0) throw unreachable();
  // Every address must pass: a name that also resolves to a private address is refused.
  if (
    !isAllowed(url, rules.allowedHosts) &&
    !addresses.every((a) => rules.network.isPublicAddress(a.address))
  )
    throw unreachable();
  if (rules.ownPorts.includes(portOf(url)) && addresses.some((a) => isOwnMachine(a.address)))
    throw unreachable();
  return addresses[0];
}

/** A lookup that answers the checked address only, whatever DNS says now. */
function pinned(address: LookupAddress): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [address]);
    else callback(null, address.address, address.family);
  }) as unknown as LookupFunction;
}

function get(url: URL, address: LookupAddress, headers: Record<string, string>): Promise<IncomingMessage> {
  const options: RequestOptions = {
    method: "GET",
    headers: { ...headers, "accept-encoding": "identity" },
    lookup: pinned(address),
    timeout: IDLE_TIMEOUT_MS,
    // No pooled socket: a kept-alive connection would skip the pinned lookup.
    agent: false,
  };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, resolve);
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}

async function readLimited(response: IncomingMessage, limit: number, deadline: number): Promise<Buffer> {
  const declared = Number(response.headers["content-length"] ?? Number.NaN);
  if (declared > limit) {
    response.destroy();
    throw tooLarge(limit);
  }
  response.setTimeout(IDLE_TIMEOUT_MS, () => response.destroy(new Error("timed out")));
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (Date.now() > deadline) throw new Error("timed out");
      if (total > limit) {
        response.destroy();
        throw tooLarge(limit);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    response.destroy();
    if (error instanceof ApiError) throw error;
    throw unreachable();
  }
  return Buffer.concat(chunks);
}

/** Fetches a dataset URL under the rules above; `url` has been parsed by the caller. */
export async function fetchDatasetUrl(
  start: URL,
  token: string | undefined,
  options: {
    limit: number;
    allowedHosts: readonly string[];
    /** The server's own API and edge ports. */
    ownPorts?: readonly number[];
    network?: DatasetUrlNetwork;
  },
): Promise<Buffer> {
  const rules: FetchRules = {
    allowedHosts: options.allowedHosts,
    ownPorts: options.ownPorts ?? [],
    network: options.network ?? systemNetwork,
  };
  const deadline = Date.now() + TOTAL_TIMEOUT_MS;
  let url = start;
  for (let hop = 0; ; hop++) {
    const address = await checkedAddress(url, rules);
    // The token belongs to the URL the tenant named: never to another origin a redirect points at.
    const headers: Record<string, string> =
      token && url.origin === start.origin ? { authorization: `Bearer ${token}` } : {};
    let response: IncomingMessage;
    try {
      response = await get(url, address, headers);
    } catch {
      throw unreachable();
    }
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if ([301, 302, 303, 307, 308].includes(status) && location) {
      response.destroy();
      if (hop >= MAX_REDIRECTS)
        throw badRequest(`"url": more than ${MAX_REDIRECTS} redirects`, "dataset_fetch_failed");
      try {
        url = new URL(location, url);
      } catch {
        throw unreachable();
      }
      continue;
    }
    if (status < 200 || status > 299) {
      response.destroy();
      throw badRequest(`"url": the host answered HTTP ${status}`, "dataset_fetch_failed");
    }
    return readLimited(response, options.limit, deadline);
  }
}
