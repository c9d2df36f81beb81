import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Usage } from '../../../shared/protocol';
import { ApiError } from '../sdk/errors';
import { Journal, STATE_DIR } from './journal';
import { matchLocal, remoteChanged } from './match';
import { loadIgnore, scanLocal } from './scan';
import { Session, type Settings } from './session';

const human = (n: number) => {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
};

/** `filesync status DIR`: what is pending, the last sync, the conflicted copies and the account's usage. */
export async function status(dir: string, settings: Settings, out: (line: string) => void): Promise<void> {
  out(`folder: ${dir}`);
  if (!existsSync(join(dir, STATE_DIR, 'journal.db'))) {
    const scan = await scanLocal(dir, await loadIgnore(dir));
    const files = [...scan.entries.values()].filter((e) => e.type === 'file').length;
    out('last sync: never');
    out(`pending: 0 ops, ${files} uploads, downloads unknown (not synced yet)`);
    out('conflicted copies: 0');
    out('usage: not signed in yet (the first sync signs in)');
    return;
  }
  const journal = new Journal(dir);
  try {
    const base = journal.base();
    const remote = journal.remote();
    const ignored = await loadIgnore(dir);
    const scan = await scanLocal(dir, ignored);
    const matched = matchLocal(base, scan, ignored);
    let uploads = journal.uploadCount();
    let localOps = journal.outbox().length;
    for (const l of matched.local.values()) {
      const b = base.get(l.id);
      if (l.isNew) {
        if (l.entry.type === 'file') uploads++;
        else localOps++;
        continue;
      }
      if (!b) continue;
      if (l.parentId !== b.parentId || l.name !== b.name) localOps++;
      if (b.type === 'file' && (l.entry.size !== b.size || l.entry.mtimeMs !== b.mtimeMs)) uploads++;
    }
    for (const id of base.keys()) if (!matched.local.has(id) && !matched.unknown.has(id)) localOps++;
    let downloads = 0;
    for (const r of remote.values()) {
      const b = base.get(r.id);
      if (r.type === 'file' && (!b || r.sha256 !== b.sha256)) downloads++;
      else if (b && remoteChanged(r, b)) localOps++;
    }
    const session = new Session(journal, settings);
    let usage: Usage | undefined;
    let usageNote = '';
    let unseen = 0;
    if (journal.get('token') && journal.get('device_id')) {
      session.deviceId = journal.get('device_id')!;
      try {
        const page = await session.client.changes({ cursor: journal.get('cursor'), limit: 1000 });
        unseen = page.items.filter((c) => !(c.deviceId === session.deviceId && (journal.remoteRev(c.id) ?? 0) >= c.rev)).length;
        usage = await session.client.usage();
      } catch (err) {
        usageNote = err instanceof ApiError ? (err.status === 404 ? 'not available from this server' : err.message) : 'server unreachable';
      }
    } else usageNote = 'not signed in yet';
    out(`account: ${journal.get('username') ?? '?'} on ${session.client.server} (device ${journal.get('device_name') ?? '?'})`);
    out(`last sync: ${journal.get('last_sync') ?? 'never'}`);
    out(`pending: ${localOps} ops, ${uploads} uploads, ${downloads} downloads${unseen ? `, ${unseen} server changes not pulled yet` : ''}`);
    const deltaSent = journal.get('delta_sent_bytes');
    if (deltaSent !== undefined) {
      const saved = Number(journal.get('delta_saved_bytes') ?? 0);
      out(`delta transfers: ${human(Number(deltaSent))} moved instead of ${human(Number(deltaSent) + saved)}, ${human(saved)} saved (${saved} bytes)`);
    }
    const conflicts = journal.conflicts();
    out(`conflicted copies: ${conflicts.length}`);
    for (const c of conflicts) out(`  ${c.path} (${c.createdAt})`);
    if (usage) {
      out(`usage: ${human(usage.usedBytes)} used (${usage.usedBytes} bytes) of ${usage.quotaBytes === null ? 'no quota' : `${human(usage.quotaBytes)} quota (${usage.quotaBytes} bytes)`}`);
      out(`  files ${human(usage.filesBytes)}, trash ${human(usage.trashBytes)}, versions ${human(usage.versionsBytes)}, uploads ${human(usage.uploadsBytes)}`);
    } else out(`usage: ${usageNote}`);
  } finally {
    journal.close();
  }
}
