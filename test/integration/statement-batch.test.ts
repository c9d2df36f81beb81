import { allowsMultipleStatements, createDb, type Db } from '../../shared/db/knex';
import { sendTogether } from '../../shared/db/statement.batch';
import { createTestEnv, type TestEnv } from '../support/harness';

/** Several statements in one query only on the pools opened for it (owner transactions'). */
let env: TestEnv;
let plain: Db;

beforeAll(async () => {
  env = await createTestEnv();
  plain = createDb(env.config.databaseUrl, { max: 1 });
  await env.db.raw('CREATE TABLE batch_probe (n INT PRIMARY KEY)');
});

afterAll(async () => {
  await plain?.destroy();
  await env?.dropAll();
});

const insert = (n: number) => ({ sql: 'INSERT INTO batch_probe (n) VALUES (?)', bindings: [n] });
const probes = async (ns: number[]) => (await env.db('batch_probe').whereIn('n', ns).orderBy('n').pluck('n')) as number[];

test('a pool is opened without multiple statements unless asked, and refuses two in one query', async () => {
  expect(allowsMultipleStatements(plain)).toBe(false);
  expect(allowsMultipleStatements(env.db)).toBe(true);
  await expect(plain.raw('SELECT 1; SELECT 2')).rejects.toThrow(/syntax/i);
});

test('sendTogether applies every statement in order on either kind of pool, in a transaction too', async () => {
  await sendTogether(env.db, [insert(1), insert(2)]);
  await plain.transaction((trx) => sendTogether(trx, [insert(3), insert(4)]));
  expect(await probes([1, 2, 3, 4])).toEqual([1, 2, 3, 4]);
});

test('the first statement that fails stops the rest, on either kind of pool', async () => {
  for (const [db, next] of [[env.db, 10], [plain, 11]] as const) {
    await expect(sendTogether(db, [insert(1), insert(next)])).rejects.toThrow(/Duplicate/);
    expect(await probes([next])).toEqual([]);
  }
});
