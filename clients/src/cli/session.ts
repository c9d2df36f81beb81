import { hostname } from 'node:os';
import { FilesyncClient } from '../sdk/client';
import { ApiError, NetworkError } from '../sdk/errors';
import type { Journal } from './journal';

/** A failure that ends the command with a given exit code (docs/CLIENT.md, "Exit codes"). */
export class ExitError extends Error {
  constructor(readonly exitCode: number, message: string) {
    super(message);
  }
}

export interface Settings {
  server: string;
  /** The server was given (option or variable); else `server` is the default, and a bound DIR's own server is used. */
  serverGiven: boolean;
  username: string | undefined;
  password: string | undefined;
  deviceName: string;
}

export function readSettings(options: { server?: string; username?: string; deviceName?: string }, env = process.env): Settings {
  const given = options.server ?? env.FILESYNC_SERVER;
  return {
    server: (given ?? 'http://127.0.0.1:8080').replace(/\/+$/, ''),
    serverGiven: given !== undefined,
    username: options.username ?? env.FILESYNC_USERNAME,
    password: env.FILESYNC_PASSWORD,
    deviceName: options.deviceName ?? env.FILESYNC_DEVICE_NAME ?? hostname(),
  };
}

async function askPassword(username: string): Promise<string | undefined> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return undefined;
  process.stderr.write(`password for ${username}: `);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve) => {
    let value = '';
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          return resolve(value);
        }
        if (ch === '\u0003') process.exit(130);
        if (ch === '\u007f') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/**
 * Signs the device in: registers it on the first run, keeps its id and the current token in the
 * journal (mode 0600), never the password; signs in again on a 401 when it can, else exit 3.
 */
export class Session {
  readonly client: FilesyncClient;
  deviceId = '';
  deviceName = '';
  private password: string | undefined;

  private readonly server: string;

  constructor(private readonly journal: Journal, private readonly settings: Settings) {
    const bound = journal.get('username') !== undefined ? journal.get('server') : undefined;
    this.server = settings.serverGiven || !bound ? settings.server : bound;
    this.client = new FilesyncClient({ server: this.server, token: journal.get('token') });
    this.password = settings.password;
  }

  /**
   * DIR is bound to an account, a server and a device only by a successful sign-in: a first run that
   * fails (exit 3 or 4) records none of them, so the next may use another username, server or
   * device name. A DIR bound to one account and server refuses another (exit 2).
   */
  async start(): Promise<void> {
    const j = this.journal;
    const known = j.get('username');
    const knownServer = j.get('server');
    const username = this.settings.username ?? known;
    if (!username) throw new ExitError(2, 'no account: give --username NAME or FILESYNC_USERNAME on the first run');
    if (known && known !== username) throw new ExitError(2, `this folder is synced with the account ${known}, not ${username}`);
    if (known && knownServer && knownServer !== this.server) {
      throw new ExitError(2, `this folder is synced with ${knownServer}, not ${this.server}`);
    }
    this.deviceName = j.get('device_name') ?? this.settings.deviceName;
    const deviceId = j.get('device_id');
    if (!known || !deviceId || !this.client.token) await this.signIn(username);
    else this.deviceId = deviceId;
  }

  async signIn(username = this.journal.get('username')!): Promise<void> {
    const j = this.journal;
    this.password ??= await askPassword(username);
    if (!this.password) throw new ExitError(3, 'signing in needs a password: set FILESYNC_PASSWORD');
    try {
      // A device id is DIR's only once a sign-in with it succeeded, on the server recorded with it.
      const bound = j.get('username') !== undefined;
      let deviceId = bound ? j.get('device_id') : undefined;
      if (!deviceId) deviceId = (await this.client.registerDevice({ name: this.deviceName.slice(0, 100), platform: process.platform })).id;
      const res = await this.client.login({ username, password: this.password, deviceId });
      j.tx(() => {
        j.set('username', username);
        j.set('server', this.server);
        j.set('device_id', deviceId);
        j.set('device_name', this.deviceName);
        j.set('token', res.token);
      });
      this.deviceId = deviceId;
    } catch (err) {
      if (err instanceof NetworkError) throw new ExitError(4, err.message);
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) throw new ExitError(3, `signing in failed: ${err.message}`);
      throw err;
    }
  }

  /** Runs a request and, on a 401, signs in once more and runs it again. */
  async authed<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) throw err;
      this.journal.set('token', undefined);
      this.client.token = undefined;
      await this.signIn();
      return fn();
    }
  }
}
