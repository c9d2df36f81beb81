import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { UsageRepository } from '../../shared/db/repositories/usage.repository';
import { newId } from '../../shared/ids';
import type { ContentHandle } from '../../shared/storage/content.store';
import { LocalContentStore } from '../../shared/storage/local/local.store';
import { Fsck } from '../../services/maintenance/fsck';
import { Api } from '../support/client';
import { sha256 } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * MAX_VERSIONS=0 here: replaced content then leaves the store at the commit, as it did before version
 * history, which is the case these tests are about.
 *
 * Content replaced while it is read, and content being committed while fsck looks: a download is never
 * cut or answered 404 because a PUT committed, and fsck never takes content being placed for an orphan.
 */

/** The local store with a gate in front of the next `open`: the test decides when a download gets there. */
class GatedStore extends LocalContentStore {
  private gate: { reached: () => void; passed: Promise<void> } | undefined;

  /** The next open waits for `release`; `reached` resolves when it is waiting. */
  arm(): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const passed = new Promise<void>((r) => (release = r));
    const arrived = new Promise<void>((r) => (reached = r));
    this.gate = { reached, passed };
    return { reached: arrived, release };
  }

  override async open(key: string): Promise<ContentHandle> {
    const gate = this.gate;
    this.gate = undefined;
    if (gate) {
      gate.reached();
      await gate.passed;
    }
    return super.open(key);
  }
}

let env: TestEnv;
let store: GatedStore;
let gateway: RunningGateway;
let api: Api;
let token: string;

beforeAll(async () => {
  env = await createTestEnv({ MAX_UPLOAD_BYTES: String(64 * 1024 * 1024), MAX_VERSIONS: '0' });
  store = new GatedStore(env.uploadDir);
  gateway = await startGateway(env, {}, { store });
  ({ api, token } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password));
});

afterAll(async () => {
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
  await expect(fs.stat(path.join(env.uploadDir, oldKey))).rejects.toMatchObject({ code: 'ENOENT' });

  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);

  expect(response.statusCode).toBe(200);
  expect(response.headers.etag).toBe(`"${file.sha256}"`);
  expect(Buffer.concat(chunks).equals(old)).toBe(true);
});

test('a download whose file is replaced between reading the row and opening the content serves the new content whole, not 404', async () => {
  const file = await uploaded('raced.bin', Buffer.from('the first content'));
  const oldKey = await keyOf(file.id);
  const gate = store.arm();

  const download = api.get(`/v1/files/${file.id}/content`);
  await gate.reached;
  const next = Buffer.from('the second content, committed meanwhile');
  expect((await put(file.id, next)).status).toBe(200);
  await expect(fs.stat(path.join(env.uploadDir, oldKey))).rejects.toMatchObject({ code: 'ENOENT' });
  gate.release();
  const res = await download;

  expect(res.status).toBe(200);
  expect(res.text).toBe(next.toString());
  // Headers and bytes describe one version: the one that was opened.
  expect(res.headers.get('etag')).toBe(`"${sha256(next)}"`);
  expect(res.headers.get('content-length')).toBe(String(next.length));
});

describe('fsck and content being committed', () => {
  const HOURS_2 = 2 * 3600_000;

  const fsck = () =>
    new Fsck(new LocalContentStore(env.uploadDir), new ContentRepository(env.db), new OwnerTransactions(env.db), new UsageRepository(env.db)).run({
      repair: true,
      orphanMinAgeMs: 10 * 60_000,
      stagingMinAgeMs: 3600_000,
    });

  test('bytes received long ago and placed just now, whose row is not committed yet, are not an orphan', async () => {
    const deviceId = newId();
    // Staged, then left two hours before the commit: the case of a resumable upload finished late.
    const staged = await store.stage(Readable.from([Buffer.from('received long ago')]), { maxBytes: 1024 });
    const old = new Date(Date.now() - HOURS_2);
    await fs.utimes(path.join(env.uploadDir, staged.stagingKey), old, old);
    const committing = `${deviceId}/${newId()}.txt`;
    await store.place(staged, committing);
    // The control: an unreferenced file as old as those bytes is an orphan.
    const orphan = `${deviceId}/${newId()}.txt`;
    await fs.writeFile(path.join(env.uploadDir, orphan), 'orphan');
    await fs.utimes(path.join(env.uploadDir, orphan), old, old);

    const report = await fsck();

    expect(report.orphans).toContain(orphan);
    expect(report.orphans).not.toContain(committing);
    expect(await fs.readFile(path.join(env.uploadDir, committing), 'utf8')).toBe('received long ago');
  });
});
