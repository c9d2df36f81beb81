import { existsSync } from 'node:fs';
import net from 'node:net';
import { createS3Client } from '../../shared/storage/s3/s3.client';
import { createBucket, Rgw, TEST_BUCKET } from './rgw';
import { createSchemaTemplate } from './schema.template';

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * The suite runs against the real MariaDB and Redis; say so plainly when either is missing. It also
 * starts one RGW (scripts/rgw.sh, a few seconds) shared by every test file that runs on S3, each
 * under a prefix of its own in one bucket; without the Ceph packages those files fail and say why.
 * And it migrates the schema template every test database is copied from (schema.template.ts).
 */
export default async function globalSetup(): Promise<void> {
  const [mysql, redis] = await Promise.all([answers(3306), answers(6379)]);
  if (!mysql || !redis) {
    throw new Error(`the tests need MariaDB on 127.0.0.1:3306 and Redis on 127.0.0.1:6379 (mysql: ${mysql}, redis: ${redis})`);
  }
  // The schema template migrates while RGW starts: neither waits for the other.
  const started = await Promise.allSettled([createSchemaTemplate(), existsSync('/usr/bin/radosgw') ? startRgw() : undefined]);
  for (const result of started) if (result.status === 'rejected') throw result.reason;
}

async function startRgw(): Promise<void> {
  const rgw = await Rgw.start();
  process.env.FILESYNC_TEST_RGW_DIR = rgw.dir;
  rgw.export();
  const client = createS3Client({
    bucket: TEST_BUCKET,
    prefix: '',
    endpoint: rgw.env.S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: rgw.env.S3_ACCESS_KEY_ID!, secretAccessKey: rgw.env.S3_SECRET_ACCESS_KEY! },
  });
  try {
    await createBucket(client);
  } finally {
    client.destroy();
  }
}
