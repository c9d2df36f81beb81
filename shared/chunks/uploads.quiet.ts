import type { Logger } from '../logger';

/**
 * Chunk lists are made when the uploads leave the machine quiet. Cutting at nice 19 still held
 * back-to-back 100 MiB multipart uploads to 0.85-0.89 of their rate without lists
 * (test/bench/chunk-lists.bench.ts): the cores' caches and memory bandwidth are shared whatever the
 * priority. So while any gateway receives a large body it says so in one Redis key that lapses
 * unless renewed, and a chunk-list job waits for the key to lapse, at most until LIST_DEFER_MAX_MS
 * after it was enqueued: under uploads that never stop, lists are late by that much and no more, and
 * the first `GET /files/:id/chunks` of a content without its list makes the list itself.
 */

/** How long a mark lasts unless renewed: longer than the pause between two uploads of one client. */
export const STREAMING_MARK_MS = 600;
/** How often a gateway renews its mark while a body streams. */
const RENEW_EVERY_MS = 200;
/** The longest a chunk list waits for quiet, from its job's creation. */
export const LIST_DEFER_MAX_MS = 10_000;

/** The key every gateway of a deployment marks and every worker reads. */
export const uploadsStreamingKey = (bullPrefix: string): string => `${bullPrefix}:chunk-lists:uploads-streaming`;

/** The Redis commands the mark needs (ioredis, one node or a cluster). */
export interface MarkClient {
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
  pttl(key: string): Promise<number>;
}

/**
 * A gateway's bodies streaming: the mark is set when the first begins and renewed while any is in
 * flight. A failed command is logged once and otherwise ignored: without the mark lists are only
 * made sooner.
 */
export class UploadsStreaming {
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private warned = false;

  constructor(
    private readonly client: () => Promise<MarkClient>,
    private readonly key: string,
    private readonly logger?: Logger,
  ) {}

  /** A large body began; the returned function, called once it ended (whatever way), ends it. */
  begin(): () => void {
    this.inFlight++;
    if (this.inFlight === 1) {
      this.mark();
      this.timer = setInterval(() => this.mark(), RENEW_EVERY_MS);
      this.timer.unref();
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.inFlight--;
      if (this.inFlight === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** Bodies in flight on this gateway. */
  get streaming(): number {
    return this.inFlight;
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private mark(): void {
    this.client()
      .then((c) => c.set(this.key, '1', 'PX', STREAMING_MARK_MS))
      .catch((err: unknown) => {
        if (this.warned) return;
        this.warned = true;
        this.logger?.warn({ err }, 'uploads streaming: the mark could not be set; chunk lists are made beside uploads');
      });
  }
}

/**
 * Resolves once no gateway has marked a body streaming, or at `deadline` (epoch ms), whichever
 * comes first. A Redis failure resolves at once: the list is then made as if it were quiet.
 */
export async function untilUploadsQuiet(client: MarkClient, key: string, deadline: number): Promise<void> {
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return;
    let ttl: number;
    try {
      ttl = await client.pttl(key);
    } catch {
      return;
    }
    // -2: no mark; -1: a mark without expiry, which no gateway sets.
    if (ttl <= 0) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(ttl, left)));
  }
}
