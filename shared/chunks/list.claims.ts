import { randomBytes } from 'node:crypto';

/**
 * Who is cutting a content's chunk list right now, across every gateway and worker of a deployment,
 * so that one content is cut once. A large download is followed at once by its device's
 * `GET /files/:id/chunks`, while the worker's job for the same content may be cutting already, or
 * may start a moment later (it waits for the uploads to pause, uploads.quiet.ts). The maker holds a
 * Redis key that lapses unless renewed: a gateway that finds it held waits for the list, and a
 * worker that finds it held leaves the list to its holder. A maker that died frees the key within
 * CLAIM_MS; a Redis failure lets everyone cut, as without claims.
 */

/** How long a claim lasts unless renewed. */
export const CLAIM_MS = 3000;
/** How often a holder renews its claim while it cuts. */
const RENEW_EVERY_MS = 1000;
/** How often a waiter looks whether the list is kept or the claim gone. */
const LOOK_EVERY_MS = 100;

/** The key of a content's claim. */
export const listClaimKey = (bullPrefix: string, storageKey: string): string => `${bullPrefix}:chunk-lists:making:${storageKey}`;

/** The Redis commands claims need (ioredis, one node or a cluster). */
export interface ClaimClient {
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<string | null>;
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
  pttl(key: string): Promise<number>;
  get(key: string): Promise<string | null>;
  del(key: string): Promise<number>;
}

/** A claim held: `release` stops renewing it and frees it, once, whatever the outcome of the cutting. */
export interface Claim {
  release(): Promise<void>;
}

export class ListClaims {
  constructor(
    private readonly client: () => Promise<ClaimClient>,
    private readonly bullPrefix: string,
  ) {}

  /** The claim on a content's list, or undefined when another maker holds it. */
  async claim(storageKey: string): Promise<Claim | undefined> {
    const key = listClaimKey(this.bullPrefix, storageKey);
    const token = randomBytes(8).toString('hex');
    let client: ClaimClient;
    try {
      client = await this.client();
      if ((await client.set(key, token, 'PX', CLAIM_MS, 'NX')) === null) return undefined;
    } catch {
      return { release: async () => undefined };
    }
    const timer = setInterval(() => {
      // Renewed only while still ours: a claim that lapsed and was taken stays its new holder's.
      client
        .get(key)
        .then((held) => (held === token ? client.set(key, token, 'PX', CLAIM_MS) : undefined))
        .catch(() => undefined);
    }, RENEW_EVERY_MS);
    timer.unref();
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        try {
          if ((await client.get(key)) === token) await client.del(key);
        } catch {
          // It lapses by itself.
        }
      },
    };
  }

  /**
   * Waits while another maker holds the content's claim, until `kept()` finds the list or `deadline`
   * (epoch ms) passes; answers what `kept()` found last, or undefined when the claim ended without it.
   */
  async waitWhileHeld<T>(storageKey: string, kept: () => Promise<T | undefined>, deadline: number): Promise<T | undefined> {
    const key = listClaimKey(this.bullPrefix, storageKey);
    for (;;) {
      let held: boolean;
      try {
        held = (await (await this.client()).pttl(key)) > 0;
      } catch {
        held = false;
      }
      const list = await kept();
      if (list !== undefined || !held || Date.now() >= deadline) return list;
      await new Promise((resolve) => setTimeout(resolve, LOOK_EVERY_MS));
    }
  }
}
