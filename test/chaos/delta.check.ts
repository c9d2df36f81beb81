import { createHash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { UsageRepository } from '../../shared/quota/usage.repository';
import type { ContentStore } from '../../shared/storage/content.store';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import type { Api } from '../support/client';
import { DeltaDevice, type DeltaCounters, type DeltaFile } from './delta.device';

const FILES_PER_USER = 2;
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A user whose two devices edit the same large files with delta uploads. */
export interface DeltaUser {
  userId: string;
  files: DeltaFile[];
  devices: DeltaDevice[];
}

export function deltaCounters(): DeltaCounters {
  return { requests: 0, acknowledged: 0, ackedLate: 0, preconditionFailed: 0, rebased: 0, failures: {}, wrongAnswers: 0, examples: [] };
}

/** Creates `n` users, each with FILES_PER_USER files of a quarter to three quarters of `maxSize` and two devices that start from them. */
export async function deltaUsers(admin: Api, baseUrl: string, n: number, counters: DeltaCounters, hangMs: number, maxSize: number): Promise<DeltaUser[]> {
  const users: DeltaUser[] = [];
  for (let i = 0; i < n; i++) {
    const first = await admin.createUser(`chaos-delta-${i}`);
    const second = await first.api.login(`chaos-delta-${i}`, 'user-password-1');
    const files: DeltaFile[] = [];
    const devices = [first, second].map((d, k) => new DeltaDevice(`u${i}-d${k}`, baseUrl, d.token, files, counters, hangMs, maxSize));
    for (let j = 0; j < FILES_PER_USER; j++) {
      const bytes = randomBytes(Math.floor(maxSize / 4 + (Math.random() * maxSize) / 2));
      const file = await devices[0]!.client.uploadFile({ content: bytes, name: `large-${j}.bin`, sha256: sha256(bytes) });
      files.push({ id: file.id, createdRev: file.rev, acks: [], last: { rev: file.rev, bytes }, unconfirmed: 0, unresolved: false });
    }
    for (const d of devices) await d.load();
    users.push({ userId: first.userId, files, devices });
  }
  return users;
}

export interface DeltaVerdict {
  files: number;
  /** Files whose content is not, byte for byte, the acknowledged write with the highest rev. */
  wrongContent: number;
  /** Acknowledged writes the file's rev cannot account for, or two writes acknowledged with one rev. */
  lost: number;
  doubled: number;
  /** Files with another number of kept versions than their writes leave. */
  versionMismatches: number;
  /** Users whose stored byte counters differ from their rows. */
  quotaMismatches: number;
  unresolved: number;
  examples: string[];
}

/**
 * Every file against what its devices were told: the final content byte-exact equal to the
 * acknowledged write with the highest rev, each write one rev (rev - created rev lies between the
 * acknowledged writes and those plus the unconfirmed ones), the kept versions as many as the writes
 * leave under MAX_VERSIONS, and the user's byte counters equal to the sum of the rows.
 */
export async function verifyDeltas(db: Knex, users: DeltaUser[], maxVersions: number): Promise<DeltaVerdict> {
  const v: DeltaVerdict = { files: 0, wrongContent: 0, lost: 0, doubled: 0, versionMismatches: 0, quotaMismatches: 0, unresolved: 0, examples: [] };
  const note = (s: string) => v.examples.length < 20 && v.examples.push(s);
  const usage = new UsageRepository(db);
  for (const u of users) {
    const reader = u.devices[0]!;
    for (const f of u.files) {
      v.files++;
      if (f.unresolved) v.unresolved++;
      const revs = f.acks.map((a) => a.rev);
      if (new Set(revs).size !== revs.length) {
        v.doubled++;
        note(`file ${f.id}: two writes acknowledged with one rev (${revs.join(',')})`);
      }
      const now = await reader.client.getFile(f.id);
      const held = (await reader.download(f.id)).bytes;
      if (!held.equals(f.last.bytes) || now.rev !== f.last.rev) {
        v.wrongContent++;
        note(`file ${f.id}: holds rev ${now.rev} ${now.sha256} (${held.length} bytes), the last acknowledged is rev ${f.last.rev} ${sha256(f.last.bytes)}`);
      }
      const writes = now.rev - f.createdRev;
      if (writes < f.acks.length) {
        v.lost++;
        note(`file ${f.id}: ${f.acks.length} writes acknowledged, the rev went up by ${writes}`);
      }
      if (writes > f.acks.length + f.unconfirmed + (f.unresolved ? 1 : 0)) {
        v.doubled++;
        note(`file ${f.id}: the rev went up by ${writes} for ${f.acks.length} acknowledged and ${f.unconfirmed} unconfirmed writes`);
      }
      const kept = Number((await db('file_versions').where({ file_id: f.id }).count<{ n: number }[]>({ n: '*' }))[0]!.n);
      if (kept !== Math.min(maxVersions, writes)) {
        v.versionMismatches++;
        note(`file ${f.id}: ${kept} versions kept after ${writes} writes (MAX_VERSIONS ${maxVersions})`);
      }
    }
    const differences = await usage.differences(u.userId);
    if (differences.length > 0) {
      v.quotaMismatches++;
      note(`user ${u.userId}: byte counters differ from the rows: ${JSON.stringify(differences)}`);
    }
  }
  return v;
}

export interface StagingVerdict {
  /** Entries older than the gateway's last SIGKILL: a crash's leftovers, the sweep's to remove. */
  leftByKills: number;
  /** Entries from after it: bytes a request that ended left behind. */
  newer: string[];
  swept: number;
  /** Entries still there after the sweep. */
  afterSweep: number;
}

/**
 * What staging holds once every request has ended: only what SIGKILLed gateways left (older than the
 * last kill), and nothing once the staging sweep ran (with no age margin: nothing is in flight).
 */
export async function checkStaging(store: ContentStore, lastKillAt: number): Promise<StagingVerdict> {
  const before = await stagingEntries(store);
  const newer = before.filter((e) => e.at.getTime() > lastKillAt + 1000).map((e) => `${e.key} at ${e.at.toISOString()}`);
  const swept = await store.sweepStaging(0);
  return { leftByKills: before.length - newer.length, newer, swept, afterSweep: (await stagingEntries(store)).length };
}

/** Staging entries (objects, and on S3 unfinished multipart uploads), with their dates. */
async function stagingEntries(store: ContentStore): Promise<Array<{ key: string; at: Date }>> {
  const out: Array<{ key: string; at: Date }> = [];
  for await (const o of store.walk()) if (o.key.startsWith('.staging/')) out.push({ key: o.key, at: o.modifiedAt });
  if (store instanceof S3ContentStore) {
    for await (const u of store.multipartUploads('.staging/')) out.push({ key: `${u.key} (multipart)`, at: u.initiated });
  }
  return out;
}
