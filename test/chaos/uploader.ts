import { createHash, randomBytes } from 'node:crypto';

const MiB = 1024 * 1024;
const CHUNK = 4 * MiB;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const meta = (name: string) => `name ${Buffer.from(name).toString('base64')}`;

export interface UploaderReport {
  completed: number;
  /** PATCHes that failed (connection cut, 5xx) and were resumed from HEAD's offset. */
  resumed: number;
  /** Uploads whose completion answer was lost with a killed gateway (their file is not checked). */
  unconfirmed: number;
  failures: Record<string, number>;
  /** Finished files whose downloaded bytes differ from what was sent, or that cannot be read. */
  mismatches: number;
  examples: string[];
}

/**
 * A client uploading files (1-24 MiB) over tus in 4 MiB PATCHes, through whatever the gateway goes
 * through: on a failed request it asks HEAD for the offset and continues from there, on the same
 * upload, as tus clients do. At the end every finished file is downloaded and compared.
 */
export class ChaosUploader {
  private readonly done: Array<{ id: string; sha256: string; size: number }> = [];
  private resumed = 0;
  private unconfirmed = 0;
  /** Why PATCHes failed: HTTP status, or no answer (connection cut, gateway gone). */
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly baseUrl: () => string,
    private readonly token: string,
  ) {}

  private async call(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Response | undefined> {
    try {
      return await fetch(`${this.baseUrl()}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, 'tus-resumable': '1.0.0', ...headers },
        body,
        signal: AbortSignal.timeout(30_000),
      });
    } catch {
      return undefined;
    }
  }

  async run(stop: () => boolean): Promise<void> {
    for (let n = 0; !stop(); n++) {
      const body = randomBytes(MiB + Math.floor(Math.random() * 23 * MiB));
      let created: Response | undefined;
      while (!created || created.status !== 201) {
        if (stop()) return;
        created = await this.call('POST', '/v1/uploads', { 'upload-length': String(body.length), 'upload-metadata': meta(`chaos-${n}.bin`) });
        if (!created || created.status !== 201) await sleep(300);
      }
      const location = new URL(created.headers.get('location')!, this.baseUrl()).pathname;
      let offset = 0;
      for (;;) {
        const end = Math.min(body.length, offset + CHUNK);
        const res = await this.call('PATCH', location, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body.subarray(offset, end));
        if (res?.status === 200) {
          const file = (await res.json()) as { id: string };
          this.done.push({ id: file.id, sha256: createHash('sha256').update(body).digest('hex'), size: body.length });
          break;
        }
        if (res?.status === 204) {
          offset = end;
          continue;
        }
        // Cut off, or the gateway went away: the bytes the bucket holds decide where to go on.
        this.resumed++;
        const why = res ? String(res.status) : 'no answer';
        this.failures.set(why, (this.failures.get(why) ?? 0) + 1);
        let head: Response | undefined;
        while (head?.status !== 200 && head?.status !== 404 && !stop()) {
          await sleep(300);
          head = await this.call('HEAD', location, {});
        }
        // Gone: its last PATCH completed it and the answer was lost with the gateway (the file
        // exists, but its id never reached this client), or the run is over.
        if (head?.status !== 200) {
          this.unconfirmed++;
          break;
        }
        offset = Number(head.headers.get('upload-offset'));
      }
    }
  }

  async verify(): Promise<UploaderReport> {
    const report: UploaderReport = { completed: this.done.length, resumed: this.resumed, unconfirmed: this.unconfirmed, failures: Object.fromEntries(this.failures), mismatches: 0, examples: [] };
    for (const f of this.done) {
      const res = await this.call('GET', `/v1/files/${f.id}/content`, {});
      const bytes = res?.status === 200 ? Buffer.from(await res.arrayBuffer()) : undefined;
      if (!bytes || bytes.length !== f.size || createHash('sha256').update(bytes).digest('hex') !== f.sha256) {
        report.mismatches++;
        if (report.examples.length < 5) report.examples.push(`file ${f.id}: ${res?.status ?? 'no answer'}, ${bytes?.length ?? 0} of ${f.size} bytes`);
      }
    }
    return report;
  }
}
