import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createDb, ensureDatabase } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrations/migrate';

/**
 * The migrated schema, made once per run: the global setup migrates a template database and keeps
 * each table's CREATE statement; a test environment then gets its database as a copy of the template
 * (its tables, and the rows the migrations wrote, knex's own bookkeeping among them) in a fraction
 * of the time the migrations take. The services still migrate at start-up and find nothing to do.
 */
const SERVER = 'mysql://root@127.0.0.1:3306';
/** The file that describes the template, for the test processes (set by the global setup). */
const VARIABLE = 'FILESYNC_TEST_SCHEMA';

interface Template {
  database: string;
  /**
   * Foreign keys are not checked while the tables are created and filled, so any order does. `columns`
   * are those a row copy writes (generated columns compute themselves), for the tables with rows.
   */
  tables: Array<{ name: string; create: string; columns?: string[] }>;
}

/** Migrates a new template database and hands its description to the test processes. */
export async function createSchemaTemplate(): Promise<void> {
  const database = `fs_test_template_${randomBytes(5).toString('hex')}`;
  await migrateToLatest(`${SERVER}/${database}`);
  const db = createDb(`${SERVER}/${database}`, { max: 1 });
  try {
    const [rows] = (await db.raw("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name", [database])) as [Array<{ name: string }>];
    const tables: Template['tables'] = [];
    for (const { name } of rows) {
      const [[created]] = (await db.raw(`SHOW CREATE TABLE \`${name}\``)) as [Array<Record<string, string>>];
      const [[{ n }]] = (await db.raw(`SELECT COUNT(*) AS n FROM \`${name}\``)) as [Array<{ n: number }>];
      let columns: string[] | undefined;
      if (Number(n) > 0) {
        const [cols] = (await db.raw(
          "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = ? AND table_name = ? AND extra NOT LIKE '%GENERATED%' ORDER BY ordinal_position",
          [database, name],
        )) as [Array<{ c: string }>];
        columns = cols.map((col) => `\`${col.c}\``);
      }
      tables.push({ name, create: created['Create Table']!, columns });
    }
    const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'fs-schema-')), 'template.json');
    await fs.writeFile(file, JSON.stringify({ database, tables } satisfies Template));
    process.env[VARIABLE] = file;
  } finally {
    await db.destroy();
  }
}

/** Drops the template the global setup made. */
export async function dropSchemaTemplate(): Promise<void> {
  const file = process.env[VARIABLE];
  if (!file) return;
  const { database } = JSON.parse(await fs.readFile(file, 'utf8')) as Template;
  const db = createDb(`${SERVER}/mysql`, { max: 1 });
  try {
    await db.raw(`DROP DATABASE IF EXISTS \`${database}\``);
  } finally {
    await db.destroy();
  }
  await fs.rm(path.dirname(file), { recursive: true, force: true });
}

/**
 * Gives the database of `url` the migrated schema: a copy of the template when the global setup made
 * one, else the migrations themselves (a run outside jest: the bench).
 */
export async function migratedDatabase(url: string): Promise<void> {
  const file = process.env[VARIABLE];
  if (!file) return migrateToLatest(url);
  const template = JSON.parse(await fs.readFile(file, 'utf8')) as Template;
  await ensureDatabase(url);
  const db = createDb(url, { max: 1 });
  try {
    const connection = await db.client.acquireConnection();
    try {
      await db.raw('SET FOREIGN_KEY_CHECKS = 0').connection(connection);
      for (const table of template.tables) {
        await db.raw(table.create).connection(connection);
        if (!table.columns) continue;
        const columns = table.columns.join(', ');
        await db.raw(`INSERT INTO \`${table.name}\` (${columns}) SELECT ${columns} FROM \`${template.database}\`.\`${table.name}\``).connection(connection);
      }
    } finally {
      await db.raw('SET FOREIGN_KEY_CHECKS = 1').connection(connection).catch(() => undefined);
      await db.client.releaseConnection(connection);
    }
  } finally {
    await db.destroy();
  }
}
