import { createHash, randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids';
import { BULK_MEDIA_TYPE } from '../../shared/protocol/bulk';

const KiB = 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export interface BulkReport {
  requests: number;
  /** Files answered 201. */
  created: number;
  /** Requests that failed whole (no answer, 5xx, 503) and whose files were sent again. */
  retried: number;
  /** Files whose id was taken when sent again: created by a request whose answer was lost. */
  createdUnanswered: number;
  failures: Record<string, number>;
  /** Files answered 201 that are gone or read back wrong. */
  lost: number;
  /** Files in the account that are none of those sent, or read back other than sent. */
  wrong: number;
  examples: string[];
}

interface Sent {
  id: string;
  name: string;
  bytes: Buffer;
  created: boolean;
}

/**
 * A client sending many small files per request (`POST /v1/files/bulk`, docs/SYNC-CLIENT.md), each
 * with an id of its own, through the faults: a request that fails whole is sent again with the files
 * it did not hear of, whose ids make a second file impossible (an id already taken answers 400). At
 * the end every file the account holds must be one sent, with its bytes, and every one answered 201
 * must be there.
 */
export class ChaosBulkUploader {
  private readonly sent: Sent[] = [];
  private readonly report: BulkReport = { requests: 0, created: 0, retried: 0, createdUnanswered: 0, failures: {}, lost: 0, wrong: 0, examples: [] };

  constructor(
    private readonly baseUrl: () => string,
    private readonly token: string,
  ) {}

  private async call(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Response | undefined> {
    try {
      return await fetch(`${this.baseUrl()}${path}`, { method, headers: { authorization: `Bearer ${this.token}`, ...headers }, body, signal: AbortSignal.timeout(30_000) });
    } catch {
      return undefined;
    }
  }

  async run(stop: () => boolean): Promise<void> {
    for (let n = 0; !stop(); n++) {
      // Mostly small files (staged whole), now and then one that streams from the body.
      let pending: Sent[] = Array.from({ length: 20 + Math.floor(Math.random() * 40) }, (_, i) => {
        const size = Math.random() < 0.05 ? 300 * KiB + Math.floor(Math.random() * 200 * KiB) : Math.floor(Math.random() * 64 * KiB);
        return { id: newId(), name: `bulk-${n}-${i}.bin`, bytes: randomBytes(size), created: false };
      });
      this.sent.push(...pending);
      while (pending.length > 0 && !stop()) {
        this.report.requests++;
        const res = await this.call('POST', '/v1/files/bulk', { 'content-type': BULK_MEDIA_TYPE }, frames(pending));
        if (res?.status !== 200) {
          const why = res ? String(res.status) : 'no answer';
          this.report.failures[why] = (this.report.failures[why] ?? 0) + 1;
          this.report.retried++;
          await res?.arrayBuffer().catch(() => undefined);
          await sleep(300);
          continue;
        }
        // Paced, so the sync devices beside it still see the service's usual latency.
        await sleep(100);
        const { results } = (await res.json()) as { results: { status: number; error?: { code: string } }[] };
        results.forEach((r, i) => {
          if (r.status === 201) {
            pending[i]!.created = true;
            this.report.created++;
          } else if (r.status === 400 && r.error?.code === 'INVALID_REQUEST') this.report.createdUnanswered++;
        });
        // Refused for a reason of its own (the quota, a 503 of the owner's queue): sent again.
        pending = pending.filter((f, i) => !f.created && results[i]?.status !== 400);
        if (pending.length > 0) await sleep(300);
      }
    }
  }

  async verify(): Promise<BulkReport> {
    const byId = new Map(this.sent.map((f) => [f.id, f]));
    const held = new Set<string>();
    for (let offset = 0; ; offset += 1000) {
      const page = await this.call('GET', `/v1/files?limit=1000&offset=${offset}`);
      const items = page?.status === 200 ? ((await page.json()) as { items: { id: string; name: string; sha256: string }[] }).items : [];
      for (const item of items) {
        held.add(item.id);
        const sent = byId.get(item.id);
        if (!sent || sent.name !== item.name || sha256(sent.bytes) !== item.sha256) this.wrong(`file ${item.id} (${item.name}) is not one sent, or not as sent`);
      }
      if (items.length < 1000) break;
    }
    for (const f of this.sent.filter((s) => s.created)) {
      const res = await this.call('GET', `/v1/files/${f.id}/content`);
      const bytes = res?.status === 200 ? Buffer.from(await res.arrayBuffer()) : undefined;
      if (!held.has(f.id) || !bytes?.equals(f.bytes)) {
        this.report.lost++;
        if (this.report.examples.length < 5) this.report.examples.push(`file ${f.id} answered 201: ${res?.status ?? 'no answer'}, ${bytes?.length ?? 0} of ${f.bytes.length} bytes`);
      }
    }
    return this.report;
  }

  private wrong(example: string): void {
    this.report.wrong++;
    if (this.report.examples.length < 5) this.report.examples.push(example);
  }
}

function frames(files: Sent[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    const header = Buffer.from(JSON.stringify({ id: f.id, name: f.name, size: f.bytes.length, sha256: sha256(f.bytes) }));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(header.length);
    parts.push(length, header, f.bytes);
  }
  parts.push(Buffer.alloc(4));
  return Buffer.concat(parts);
}
