import { ConfigError, loadConfig, type ConfigReader } from '../../shared/config';

/** The message a process prints for a bad environment: one sentence that names the variable. */
function messageOf(env: NodeJS.ProcessEnv, reader?: ConfigReader): string {
  try {
    loadConfig(env, reader);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('configuration errors', () => {
  test('a variable set without its required partner names both, without validator jargon', () => {
    expect(messageOf({ ADMIN_USERNAME: 'admin' })).toBe('ADMIN_PASSWORD must be set when ADMIN_USERNAME is');
    expect(messageOf({ ADMIN_PASSWORD: 'a-long-password' })).toBe('ADMIN_USERNAME must be set when ADMIN_PASSWORD is');
  });

  test('a value of the wrong kind names the variable and is never echoed', () => {
    expect(messageOf({ PORT: 'eighty' })).toBe('PORT must be a number');
    const secret = messageOf({ JWT_SECRET: 'short-secret' });
    expect(secret).toMatch(/^JWT_SECRET /);
    expect(secret).not.toContain('short-secret');
    expect(messageOf({ HOST: 'not a host!' })).toMatch(/^HOST /);
  });

  test('a custom check keeps its own sentence', () => {
    expect(messageOf({ TRUST_PROXY: 'true' })).toMatch(/^TRUST_PROXY must be false, a hop count/);
  });

  test('a message never starts with a colon or speaks of "value"', () => {
    for (const env of [{ ADMIN_USERNAME: 'admin' }, { STORAGE_DRIVER: 's3' }, { S3_ACCESS_KEY_ID: 'AKIA', STORAGE_DRIVER: 's3', S3_BUCKET: 'content' }]) {
      const message = messageOf(env);
      expect(message).not.toMatch(/^:|"value"/);
      expect(message).toMatch(/^[A-Z0-9_]+ /);
    }
  });

  test('each process checks only the variables it reads: the worker leaves the gateway\'s to the gateway', () => {
    expect(() => loadConfig({ ADMIN_USERNAME: 'admin' }, 'worker')).not.toThrow();
    expect(() => loadConfig({ SYNC_CONCURRENCY: '0' }, 'gateway')).not.toThrow();
    expect(() => loadConfig({ PORT: 'eighty', HOST: 'not a host!', WORKER_PORT: 'x' }, 'tool')).not.toThrow();
    expect(messageOf({ ADMIN_USERNAME: 'admin' }, 'gateway')).toMatch(/^ADMIN_PASSWORD /);
    expect(messageOf({ HOST: 'not a host!' }, 'worker')).toMatch(/^HOST /);
    expect(messageOf({ SYNC_CONCURRENCY: '0' }, 'worker')).toMatch(/^SYNC_CONCURRENCY /);
    // Tests and anything that reads for every service check every variable.
    expect(messageOf({ SYNC_CONCURRENCY: '0' })).toMatch(/^SYNC_CONCURRENCY /);
  });
});

describe('HOST', () => {
  test('defaults to the loopback address, and takes an address or a host name', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '::' }).host).toBe('::');
    expect(loadConfig({ HOST: 'localhost' }).host).toBe('localhost');
  });
});
