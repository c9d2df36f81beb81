import type { Config } from '../config';
import type { ContentStore } from './content.store';
import { LocalContentStore } from './local/local.store';
import { S3ContentStore } from './s3/s3.store';

/** The content store the configuration names: the local driver on UPLOAD_DIR, or an S3 bucket (STORAGE_DRIVER=s3). */
export function createContentStore(config: Pick<Config, 'uploadDir'> & Partial<Pick<Config, 'storageDriver' | 's3'>>): ContentStore {
  if (config.storageDriver === 's3' && config.s3) return new S3ContentStore(config.s3);
  return new LocalContentStore(config.uploadDir);
}
