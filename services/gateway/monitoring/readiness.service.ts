import { databaseAnswers, type Db } from '../../../shared/db/knex';
import type { ContentStore } from '../../../shared/storage/content.store';
import type { BatchSubmitter } from '../sync/batch.submitter';

/** Which of the gateway's dependencies answer now. */
export interface Readiness {
  mysql: boolean;
  redis: boolean;
  /** The content store (UPLOAD_DIR, or the S3 bucket). */
  storage: boolean;
}

/** Asks MySQL, Redis (through the sync queues) and the content store at once, for /readyz. */
export class ReadinessService {
  constructor(
    private readonly db: Db,
    private readonly sync: Pick<BatchSubmitter, 'ping'>,
    private readonly store: Pick<ContentStore, 'ping'>,
  ) {}

  async check(): Promise<Readiness> {
    const [mysql, redis, storage] = await Promise.all([databaseAnswers(this.db), this.sync.ping(), this.store.ping()]);
    return { mysql, redis, storage };
  }
}
