import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { loadConfig } from '../../shared/config';
import type { ContentStore } from '../../shared/storage/content.store';
import { LocalContentStore } from '../../shared/storage/local/local.store';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { listFilesUnder } from './fixtures';
import { createTestEnv, type TestEnv } from './harness';
import { emptyPrefix, s3Environment } from './rgw';

/**
 * The content drivers every content-path test runs on, from one body (`describe.each(DRIVERS)`):
 * the local disk, and S3 on the suite's RGW (the global setup starts it).
 */
export const DRIVERS = ['local', 's3'] as const;
export type Driver = (typeof DRIVERS)[number];

/** The environment overrides that put a test environment on `driver`. */
export function onDriver(driver: Driver, overrides: Record<string, string> = {}): Record<string, string> {
  return driver === 's3' ? { ...overrides, STORAGE_DRIVER: 's3' } : overrides;
}

const MARKER = '.filesync-store';
const TUS = '.tus';

/**
 * A test environment's content as its storage driver sees it, through the storage module only
 * (ContentStore, and the S3 driver's listings): what a test asserts about stored bytes holds on
 * either driver.
 */
export class StoredContent {
  readonly store: ContentStore;
  readonly driver: Driver;

  constructor(readonly env: TestEnv) {
    this.store = createContentStore(env.config);
    this.driver = this.store instanceof S3ContentStore ? 's3' : 'local';
  }

  /** Content and staging keys (what fsck walks), sorted. */
  async keys(): Promise<string[]> {
    const out: string[] = [];
    for await (const o of this.store.walk()) out.push(o.key);
    return out.sort();
  }

  /** Staging keys (bytes being received, or left by a crash), sorted. */
  async staging(): Promise<string[]> {
    return (await this.keys()).filter((k) => k.startsWith('.staging/'));
  }

  /**
   * Everything staging holds, sorted: its keys, and on S3 also the unfinished multipart uploads of
   * content still being received (stored parts no listing of objects shows).
   */
  async stagingEntries(): Promise<string[]> {
    const multipart = (await this.unfinishedMultipartUploads()).filter((k) => k.startsWith('.staging/'));
    return [...(await this.staging()), ...multipart.map((k) => `${k} (multipart)`)].sort();
  }

  /**
   * Makes `keys` at least `ms` old as fsck sees them: back-dated on disk; on S3, where an object is
   * dated by its writing and nothing changes that, by waiting.
   */
  async age(keys: string[], ms: number): Promise<void> {
    if (this.store instanceof S3ContentStore) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return;
    }
    const then = new Date(Date.now() - ms);
    for (const key of keys) await fs.utimes(path.join(this.env.uploadDir, key), then, then);
  }

  /** The objects of resumable uploads in progress (their bytes and info; each driver names its own), sorted. */
  async tusObjects(): Promise<string[]> {
    const out: string[] = [];
    const listing = this.store instanceof S3ContentStore ? this.store.list(`${TUS}/`) : (this.store as LocalContentStore).walk(TUS);
    for await (const o of listing) out.push(o.key);
    return out.sort();
  }

  /**
   * What resumable uploads in progress keep, named relative to `.tus/`, sorted: on disk `<id>` (the
   * bytes) and `<id>.json`; on S3 `<id>.info`, `<id>.part` (a tail smaller than a part) and the
   * unfinished multipart upload `<id>`.
   */
  async resumableEntries(): Promise<string[]> {
    const multipart = (await this.unfinishedMultipartUploads()).filter((k) => k.startsWith(`${TUS}/`));
    return [...(await this.tusObjects()), ...multipart].map((k) => k.slice(TUS.length + 1)).sort();
  }

  /** The stored info of a resumable upload in progress, as text: `<id>.json` on disk, `<id>.info` on S3. */
  resumableInfo(id: string): Promise<string | undefined> {
    return this.text(`${TUS}/${id}${this.driver === 's3' ? '.info' : '.json'}`);
  }

  /** Everything the store holds: content, staging, resumable uploads and the marker. */
  async everything(): Promise<string[]> {
    const marker = (await this.store.readMarker()) === undefined ? [] : [MARKER];
    return [...(await this.keys()), ...(await this.tusObjects()), ...marker].sort();
  }

  async exists(key: string): Promise<boolean> {
    return (await this.store.stat(key)) !== undefined;
  }

  /** The content of `key` as text, or undefined when there is none. */
  async text(key: string): Promise<string | undefined> {
    const handle = await this.store.open(key).catch(() => undefined);
    if (!handle) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of await handle.read()) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  /** Writes `content` under `key` directly, as a crash or another program would leave it. */
  async plant(key: string, content: string): Promise<void> {
    if (this.store instanceof S3ContentStore) {
      await this.store.client.send(new PutObjectCommand({ Bucket: this.store.bucket, Key: this.store.objectKey(key), Body: content }));
      return;
    }
    const staged = await this.store.stage(Readable.from([Buffer.from(content)]), { maxBytes: Number.MAX_SAFE_INTEGER });
    await this.store.place(staged, key);
  }

  /** The bucket's own object keys under the environment's S3_PREFIX, prefix included (S3 only), sorted. */
  async objectKeys(): Promise<string[]> {
    if (!(this.store instanceof S3ContentStore)) throw new Error('object keys exist on S3 only');
    const res = await this.store.client.send(new ListObjectsV2Command({ Bucket: this.store.bucket, Prefix: this.store.config.prefix }));
    return (res.Contents ?? []).map((o) => o.Key!).sort();
  }

  /** Unfinished S3 multipart uploads under the environment's prefix (none exist on disk). */
  async unfinishedMultipartUploads(): Promise<string[]> {
    if (!(this.store instanceof S3ContentStore)) return [];
    const out: string[] = [];
    for await (const u of this.store.multipartUploads('')) out.push(u.key);
    return out.sort();
  }

  /** Files under UPLOAD_DIR: the store itself on disk; on S3 there must be none. */
  uploadDirFiles(): Promise<string[]> {
    return listFilesUnder(this.env.uploadDir);
  }
}

/** Another store on the same driver as a test environment's, empty: a folder, or a prefix of the test bucket. */
export interface ScratchStore {
  /** The settings that point a process at it (UPLOAD_DIR, or S3_PREFIX). */
  setting: Record<string, string>;
  stored: StoredContent;
  /** Removes it and whatever it holds. */
  drop(): Promise<void>;
}

/** `missing`: a folder that does not exist yet (a prefix never does before its first object). */
export async function scratchStore(env: TestEnv, options: { missing?: boolean } = {}): Promise<ScratchStore> {
  let setting: Record<string, string>;
  let uploadDir = env.uploadDir;
  let scratchDir: string | undefined;
  if (env.config.storageDriver === 's3') {
    setting = { S3_PREFIX: `${env.name}-scratch-${randomBytes(4).toString('hex')}/` };
  } else {
    scratchDir = await fs.mkdtemp(path.join(os.tmpdir(), 'fs-scratch-store-'));
    uploadDir = options.missing ? path.join(scratchDir, 'uploads') : scratchDir;
    setting = { UPLOAD_DIR: uploadDir };
  }
  const config = loadConfig({ ...env.env, ...setting });
  const stored = new StoredContent({ ...env, uploadDir, config });
  return {
    setting,
    stored,
    async drop() {
      if (scratchDir) await fs.rm(scratchDir, { recursive: true, force: true });
      if (config.s3) await emptyPrefix(config.s3);
    },
  };
}

/** A way to make a test environment's store stop answering, and answer again. */
export interface StoreOutage {
  /** The settings that route the environment's store through this outage (none on disk). */
  setting: Record<string, string>;
  /** The store stops answering: the bucket's endpoint refuses connections; the folder is gone. */
  begin(env: TestEnv): Promise<void>;
  /** The store answers again, as it was. */
  end(env: TestEnv): Promise<void>;
  close(): Promise<void>;
}

/**
 * On S3 the store is reached through a TCP relay to the suite's RGW, which the outage closes (the RGW
 * others use keeps running); on disk UPLOAD_DIR is moved away and back.
 */
export async function storeOutage(driver: Driver): Promise<StoreOutage> {
  if (driver === 'local') {
    const away = (env: TestEnv) => `${env.uploadDir}.away`;
    return {
      setting: {},
      begin: (env) => fs.rename(env.uploadDir, away(env)),
      end: (env) => fs.rename(away(env), env.uploadDir),
      close: async () => undefined,
    };
  }
  const target = new URL(s3Environment('').S3_ENDPOINT!);
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => relay.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  const stop = async () => {
    // Connections the client keeps alive are cut too: an outage leaves none standing.
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => (relay.listening ? relay.close(() => resolve()) : resolve()));
  };
  await listen(0);
  const port = (relay.address() as net.AddressInfo).port;
  return {
    setting: { S3_ENDPOINT: `http://127.0.0.1:${port}` },
    begin: stop,
    end: () => listen(port),
    close: stop,
  };
}

/**
 * For a test file about the S3 driver itself: a test environment on the suite's RGW and its store,
 * made before the file's tests and dropped after them.
 */
export function onS3Store(): { env: () => TestEnv; store: () => S3ContentStore } {
  let env: TestEnv | undefined;
  let store: S3ContentStore | undefined;
  beforeAll(async () => {
    env = await createTestEnv({ STORAGE_DRIVER: 's3' });
    store = createContentStore(env.config) as S3ContentStore;
  });
  afterAll(async () => {
    await env?.dropAll();
  });
  return { env: () => env!, store: () => store! };
}
