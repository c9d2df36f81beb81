import { Rgw } from './rgw';

/** Stops the RGW the global setup started. */
export default async function globalTeardown(): Promise<void> {
  const dir = process.env.FILESYNC_TEST_RGW_DIR;
  if (dir) await Rgw.stop(dir);
}
