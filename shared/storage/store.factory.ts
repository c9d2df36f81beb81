import type { Config } from '../config';
import type { ContentStore } from './content.store';
import { LocalContentStore } from './local/local.store';
import type { S3ContentStore } from './s3/s3.store';

/** The content store the configuration names: the local driver on UPLOAD_DIR, or an S3 bucket (STORAGE_DRIVER=s3). */
export function createContentStore(config: Pick<Config, 'uploadDir'> & Partial<Pick<Config, 'storageDriver' | 's3'>>): ContentStore {
  if (config.storageDriver === 's3' && config.s3) {
    // Loaded only when used: the AWS SDK takes a noticeable share of a process's start-up.
    const { S3ContentStore: Store } = require('./s3/s3.store') as { S3ContentStore: typeof S3ContentStore };
    return new Store(config.s3);
  }
  return new LocalContentStore(config.uploadDir);
}
