import type { Config } from '../config';
import type { ContentStore } from './content.store';
import { LocalContentStore } from './local/local.store';

/** The content store the configuration names: today the local driver on UPLOAD_DIR. */
export function createContentStore(config: Pick<Config, 'uploadDir'>): ContentStore {
  return new LocalContentStore(config.uploadDir);
}
