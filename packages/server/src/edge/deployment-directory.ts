// What the edge needs per request, the deployment of a slug and whether a key
// opens it, read from the database and kept for a moment. Any change to a
// deployment or key clears the cache at once: in this process directly, in
// other processes sharing PostgreSQL through NOTIFY svc_deployments. So
// disabling, auth-mode changes and revocation still apply to the next request.
// A slug is looked up in lower case however it was written (Host, path or
// header): slugs are lower case, and a host name's case never matters.
import { sha256Hex } from "../ids.js";
import type { DeploymentRow, DeploymentStore } from "../store/deployment-store.js";

interface Entry<T> {
  value: T;
  until: number;
}

const MAX_ENTRIES = 10_000;

/** A slug as the deployments hold it: ASCII letters lower-cased, anything else left (it matches no slug). */
export const deploymentSlugKey = (slug: string): string => slug.replace(/[A-Z]+/g, (s) => s.toLowerCase());

export class DeploymentDirectory {
  private readonly bySlug = new Map<string, Entry<DeploymentRow | undefined>>();
  private readonly keys = new Map<string, Entry<string | null>>();
  /** Bumped by every invalidation: a read that straddles one must not be cached. */
  private generation = 0;

  constructor(
    private readonly deployments: DeploymentStore,
    private readonly ttlMs = 2000,
  ) {}

  async deployment(written: string): Promise<DeploymentRow | undefined> {
    const slug = deploymentSlugKey(written);
    const hit = this.bySlug.get(slug);
    if (hit && hit.until > Date.now()) return hit.value;
    const generation = this.generation;
    const value = await this.deployments.bySlug(slug);
    if (generation === this.generation) this.remember(this.bySlug, slug, value);
    return value;
  }

  /** The id of the enabled key of this deployment with this plaintext, or null. */
  async keyId(deploymentId: string, plaintext: string): Promise<string | null> {
    const cacheKey = `${deploymentId}:${sha256Hex(plaintext)}`;
    const hit = this.keys.get(cacheKey);
    if (hit && hit.until > Date.now()) return hit.value;
    const generation = this.generation;
    const value = (await this.deployments.enabledKey(deploymentId, plaintext))?.id ?? null;
    if (generation === this.generation) this.remember(this.keys, cacheKey, value);
    return value;
  }

  invalidate(): void {
    this.generation++;
    this.bySlug.clear();
    this.keys.clear();
  }

  private remember<T>(map: Map<string, Entry<T>>, key: string, value: T): void {
    if (map.size >= MAX_ENTRIES) map.clear();
    map.set(key, { value, until: Date.now() + this.ttlMs });
  }
}
