import { Rgw } from './rgw';
import { dropSchemaTemplate } from './schema.template';

/** Stops the RGW the global setup started and drops the schema template. */
export default async function globalTeardown(): Promise<void> {
  const dir = process.env.FILESYNC_TEST_RGW_DIR;
  await dropSchemaTemplate();
  if (dir) await Rgw.stop(dir);
}
