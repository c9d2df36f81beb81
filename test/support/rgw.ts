import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { S3Config } from '../../shared/config';
import { createS3Client } from '../../shared/storage/s3/s3.client';

const run = promisify(execFile);

/** The bucket every test environment on S3 shares, each under a prefix of its own. */
export const TEST_BUCKET = 'filesync-test';

/** The variables through which the suite's RGW reaches the test files (set by the global setup). */
const VARIABLES = ['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const;
const EXPORTED = (name: string) => `FILESYNC_TEST_${name}`;

function script(): string {
  const root = __dirname.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..';
  return path.resolve(__dirname, root, 'scripts/rgw.sh');
}

/** A one-node Ceph cluster with radosgw, started by scripts/rgw.sh. */
export class Rgw {
  private constructor(
    readonly dir: string,
    /** S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY. */
    readonly env: Record<string, string>,
  ) {}

  static async start(): Promise<Rgw> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'rgw-'));
    const { stdout } = await run('bash', [script(), 'start', dir], { timeout: 120_000 });
    const env = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => line.split('=') as [string, string])
        .filter(([k]) => (VARIABLES as readonly string[]).includes(k)),
    );
    return new Rgw(dir, env);
  }

  static async stop(dir: string): Promise<void> {
    await run('bash', [script(), 'stop', dir], { timeout: 60_000 });
  }

  /** Hands the endpoint and keys to the test processes started after this one. */
  export(): void {
    for (const name of VARIABLES) process.env[EXPORTED(name)] = this.env[name];
  }
}

/** The environment of a test on the suite's RGW: its bucket, a prefix of its own, the endpoint and keys. */
export function s3Environment(prefix: string): Record<string, string> {
  const env: Record<string, string> = { STORAGE_DRIVER: 's3', S3_BUCKET: TEST_BUCKET, S3_PREFIX: prefix };
  for (const name of VARIABLES) {
    const value = process.env[EXPORTED(name)];
    if (!value) throw new Error('no RGW for the S3 tests: the global setup starts one with scripts/rgw.sh (apt-get install radosgw ceph-mon ceph-osd ceph-common)');
    env[name] = value;
  }
  return env;
}

export async function createBucket(client: S3Client, bucket = TEST_BUCKET): Promise<void> {
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes((err as Error).name)) throw err;
  }
}

/** Deletes every object under a prefix (a test's leftovers). */
export async function emptyPrefix(config: S3Config): Promise<void> {
  const client = createS3Client(config);
  try {
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: config.bucket, Prefix: config.prefix, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length > 0) await client.send(new DeleteObjectsCommand({ Bucket: config.bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  } finally {
    client.destroy();
  }
}
