import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const LOCAL_MYSQL = 'mysql://root@127.0.0.1:3306';
export const LOCAL_REDIS = 'redis://127.0.0.1:6379';

export interface RunOptions {
  /** `mysql://user@host:port` of the server the run's database goes on; the local MariaDB by default. */
  databaseServer?: string;
  /** Content in `uploads/` inside the run's directory rather than in the directory itself. */
  uploadsInSubfolder?: boolean;
}

export interface RunIdentity {
  admin: { username: string; password: string };
  jwtSecret: string;
  /** REDIS_URL or REDIS_CLUSTER_NODES; the local Redis by default. */
  redis?: Record<string, string>;
}

/**
 * One run of the service kept apart from every other, for the jest harness, the bench and the chaos
 * run alike: a name of its own, which is its database's and its queue prefix, a directory of its own
 * for its files, and the environment that points the service at them.
 */
export class IsolatedRun {
  readonly name: string;
  readonly databaseUrl: string;
  /** The run's directory (DATA_DIR), made by `open()`. */
  dir = '';
  /** Where content goes: the run's directory, or `uploads/` in it. */
  uploadDir = '';

  constructor(
    kind: string,
    private readonly options: RunOptions = {},
  ) {
    this.name = `${kind}_${randomBytes(5).toString('hex')}`;
    this.databaseUrl = `${(options.databaseServer ?? LOCAL_MYSQL).replace(/\/$/, '')}/${this.name}`;
  }

  /** Makes the run's directory, and the uploads folder in it when asked for. */
  async open(): Promise<this> {
    this.dir = await fs.mkdtemp(path.join(os.tmpdir(), `${this.name}-`));
    this.uploadDir = this.options.uploadsInSubfolder ? path.join(this.dir, 'uploads') : this.dir;
    await fs.mkdir(this.uploadDir, { recursive: true });
    return this;
  }

  /**
   * What the run gives the service: its database, Redis, directories, queue prefix, secret and
   * administrator, with the sign-in and registration limits off (a run signs in many times from one
   * address); `settings` go over these.
   */
  env(identity: RunIdentity, settings: Record<string, string> = {}): Record<string, string> {
    return {
      DATABASE_URL: this.databaseUrl,
      ...(identity.redis ?? { REDIS_URL: LOCAL_REDIS }),
      UPLOAD_DIR: this.uploadDir,
      DATA_DIR: this.dir,
      QUEUE_PREFIX: this.name,
      JWT_SECRET: identity.jwtSecret,
      ADMIN_USERNAME: identity.admin.username,
      ADMIN_PASSWORD: identity.admin.password,
      LOGIN_RATE_LIMIT: '0',
      LOGIN_ADDRESS_RATE_LIMIT: '0',
      REGISTER_RATE_LIMIT: '0',
      ...settings,
    };
  }
}
