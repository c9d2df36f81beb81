import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { newId } from '../../shared/ids';
import type { ContentHandle, ContentStore } from '../../shared/storage/content.store';
import { HELD_IN_MEMORY } from '../../shared/storage/s3/s3.staging';
import { Fsck } from '../../services/maintenance/fsck';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { sha256 } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * MAX_VERSIONS=0 here: replaced content then leaves the store at the commit, as it did before version
 * history, which is the case these tests are about.
 *
 * Content replaced while it is read, and content being committed while fsck looks: a download is never
 * cut or answered 404 because a PUT committed, and fsck never takes content being placed for an orphan.
 */

/**
 * A gate in front of the store's next `open`: the test decides when a download gets there. It wraps
 * the instance the gateway is given, whichever driver made it.
 */
function gate(store: ContentStore): { arm(): { reached: Promise<void>; release: () => void } } {
  let armed: { reached: () => void; passed: Promise<void> } | undefined;
  const open = store.open.bind(store);
  store.open = async (key: string): Promise<ContentHandle> => {
    const held = armed;
    armed = undefined;
    if (held) {
      held.reached();
      await held.passed;
    }
    return open(key);
  };
  return {
    /** The next open waits for `release`; `reached` resolves when it is waiting. */
    arm() {
      let release!: () => void;
      let reached!: () => void;
      const passed = new Promise<void>((r) => (release = r));
      const arrived = new Promise<void>((r) => (reached = r));
      armed = { reached, passed };
      return { reached: arrived, release };
    },
  };
}

describe.each(DRIVERS)('content raced on the %s driver', (driver) => {
  let env: TestEnv;
  let stored: StoredContent;
  let gated: ReturnType<typeof gate>;
  let gateway: RunningGateway;
  let api: Api;
  let token: string;

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver, { MAX_UPLOAD_BYTES: String(64 * 1024 * 1024), MAX_VERSIONS: '0' }));
    stored = new StoredContent(env);
    gated = gate(stored.store);
    gateway = await startGateway(env, {}, { store: stored.store });
    ({ api, token } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password));
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await gateway?.close();
    await env?.dropAll();
  });

  async function uploaded(name: string, content: Buffer): Promise<{ id: string; sha256: string }> {
    const res = await api.upload({}, { name, content, type: 'application/octet-stream' });
    expect(res.status).toBe(201);
    return res.body;
  }

  const put = (id: string, body: Buffer) => api.request('PUT', `/v1/files/${id}/content`, { body, headers: {} });
  const keyOf = async (id: string): Promise<string> => (await env.db('resources').where({ id }).first()).storage_key;

  test('a download under way when a PUT commits gets the bytes it started with, whole, though they have left the store', async () => {
    const old = randomBytes(8 * 1024 * 1024);
    const file = await uploaded('big.bin', old);
    const oldKey = await keyOf(file.id);

    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${gateway.baseUrl}/v1/files/${file.id}/content`, { headers: { authorization: `Bearer ${token}` } }, resolve).on('error', reject);
    });
    // The client reads nothing yet: the gateway is held by the socket, far from the last byte.
    response.pause();
    const replaced = await put(file.id, Buffer.from('the new content'));
    expect(replaced.status).toBe(200);
    expect(await stored.exists(oldKey)).toBe(false);

    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);

    expect(response.statusCode).toBe(200);
    expect(response.headers.etag).toBe(`"${file.sha256}"`);
    expect(Buffer.concat(chunks).equals(old)).toBe(true);
  });

  test('a download whose file is replaced between reading the row and opening the content serves the new content whole, not 404', async () => {
    const file = await uploaded('raced.bin', Buffer.from('the first content'));
    const oldKey = await keyOf(file.id);
    const held = gated.arm();

    const download = api.get(`/v1/files/${file.id}/content`);
    await held.reached;
    const next = Buffer.from('the second content, committed meanwhile');
    expect((await put(file.id, next)).status).toBe(200);
    expect(await stored.exists(oldKey)).toBe(false);
    held.release();
    const res = await download;

    expect(res.status).toBe(200);
    expect(res.text).toBe(next.toString());
    // Headers and bytes describe one version: the one that was opened.
    expect(res.headers.get('etag')).toBe(`"${sha256(next)}"`);
    expect(res.headers.get('content-length')).toBe(String(next.length));
  });

  describe('fsck and content being committed', () => {
    /** fsck's minimum age of an orphan here; the bytes below are older than that when they are placed. */
    const MIN_AGE_MS = 3000;

    const fsck = () =>
      new Fsck(stored.store, new ContentRepository(env.db), new OwnerTransactions(env.db), new UsageRepository(env.db), new DerivedRepair(env.db)).run({
        repair: true,
        orphanMinAgeMs: MIN_AGE_MS,
        stagingMinAgeMs: 3600_000,
      });

    test('bytes received long ago and placed just now, whose row is not committed yet, are not an orphan', async () => {
      const deviceId = newId();
      // Staged, then left long before the commit: the case of a resumable upload finished late. Over
      // the size S3 holds in memory, so that a staging object is written there too.
      const bytes = randomBytes(HELD_IN_MEMORY + 1024);
      const staged = await stored.store.stage(Readable.from([bytes]), { maxBytes: bytes.length });
      // The control: an unreferenced content as old as those bytes is an orphan.
      const orphan = `${deviceId}/${newId()}.txt`;
      await stored.plant(orphan, 'orphan');
      await stored.age([staged.stagingKey, orphan], MIN_AGE_MS + 1000);
      const committing = `${deviceId}/${newId()}.bin`;
      // Placed more than the local store's 10 s of freshness after its staging (as the aging above
      // says), so that the store dates the bytes anew rather than trusting them to be recent.
      const realNow = Date.now;
      const later = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + MIN_AGE_MS + 11_000);
      try {
        await stored.store.place(staged, committing);
      } finally {
        later.mockRestore();
      }

      const report = await fsck();

      expect(report.orphans).toContain(orphan);
      expect(report.orphans).not.toContain(committing);
      const handle = await stored.store.open(committing);
      const chunks: Buffer[] = [];
      for await (const chunk of await handle.read()) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    });
  });
});
