import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Api } from './client';

/** A folder tree made with sync ops: `paths` like `a/`, `a/b/`; returns the id of each folder by path. */
export async function makeFolders(api: Api, paths: string[], opIdStart = 1): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  let opId = opIdStart;
  const ops = paths.map((p) => {
    const parts = p.replace(/\/$/, '').split('/');
    const name = parts.pop()!;
    const parent = parts.length ? ids[`${parts.join('/')}/`]! : null;
    const id = [...Array(32)].map(() => Math.floor(Math.random() * 16).toString(16)).join('');
    ids[p] = id;
    return { opId: opId++, type: 'create', resourceId: id, payload: { resourceType: 'folder', name, parentId: parent } };
  });
  const res = await api.post('/v1/sync/ops', { ops });
  if (res.status !== 200 || res.body.failed) throw new Error(`folders not made: ${res.text}`);
  return ids;
}

/** The entries of a ZIP (name and content as text), read by the system's unzip. */
export async function unzipEntries(zip: Buffer): Promise<Record<string, string>> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fs-zip-'));
  try {
    const file = path.join(dir, 'a.zip');
    await fs.writeFile(file, zip);
    execFileSync('unzip', ['-tq', file]);
    const names = execFileSync('unzip', ['-Z1', file]).toString('utf8').split('\n').filter(Boolean);
    const out: Record<string, string> = {};
    for (const name of names) out[name] = execFileSync('unzip', ['-p', file, name.replace(/([[\]*?])/g, '[$1]')], { maxBuffer: 64 * 1024 * 1024 }).toString('utf8');
    return out;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
