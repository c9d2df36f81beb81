import type { AppliedOp, File, SyncOp } from '../../../shared/protocol';
import { nameProblem } from '../../../shared/protocol';
import { ApiError } from '../sdk/errors';
import type { BaseNode, RemoteNode } from './journal';
import { byDepth, remoteChanged, type LocalNode, type Matched } from './match';
import { LiveTree } from './live.tree';
import { checkGuard, firstLook, localSha, stillWriting, toBase, vouchedSha, type SyncContext } from './context';
import { StillWritingError } from './transfers';
import { planPlaces, type Place, type PlaceStep } from './place.plan';
import { batches, BULK_FILE_MAX } from './bulk.transfers';
import { sendBatches, type BatchItem } from './bulk.push';
import { DELTA_THRESHOLD } from './delta.transfers';

const BATCH = 500;

/** Sends ops in batches through the outbox (persisted opIds): answers how many were applied. */
export async function sendOps(ctx: SyncContext, ops: SyncOp[], label: (op: SyncOp) => string, onApplied: (op: SyncOp, a: AppliedOp) => void): Promise<number> {
  let done = 0;
  for (let i = 0; i < ops.length; i += BATCH) {
    const chunk = ops.slice(i, i + BATCH);
    ctx.journal.putOutbox(chunk);
    const res = await ctx.session.authed(() => ctx.session.client.syncOps(chunk, ctx.signal));
    ctx.journal.tx(() => res.applied.forEach((a, k) => onApplied(chunk[k]!, a)));
    done += res.applied.length;
    ctx.journal.clearOutbox(chunk.map((o) => o.opId));
    if (res.failed) {
      const failed = chunk[res.applied.length];
      const code = res.failed.error.code;
      // A stale baseRev or a taken name is settled by the next pull; anything else is reported.
      if (failed && code !== 'PRECONDITION_FAILED' && code !== 'NAME_CONFLICT' && code !== 'NOT_FOUND') {
        ctx.reporter.error(`skipped ${label(failed)}: ${res.failed.error.message}`);
        // A name the service refuses is skipped for good (exit 0); anything else is left unsent (exit 1).
        if (code !== 'INVALID_REQUEST') ctx.unsent = true;
      } else ctx.pending++;
      return done;
    }
  }
  return done;
}

/**
 * Ops left in the outbox by a run that was killed: sent again with their opIds (duplicates are
 * no-ops). A rename or move the service holds now was this device's intent: it becomes the merge
 * base's place, so that the pull does not bring it down as the server's change over the local one
 * (undoing a swap half made) and the push sends what the disk did since. The base's rev stays: a
 * duplicate answers the rev now, which may include another device's later change.
 */
export async function flushOutbox(ctx: SyncContext): Promise<void> {
  const j = ctx.journal;
  const pending = j.outbox();
  if (pending.length === 0) return;
  const ops = pending.map((p) => JSON.parse(p.op) as SyncOp);
  const base = j.base();
  await sendOps(ctx, ops, (op) => op.resourceId ?? '', (op) => {
    const b = op.resourceId === undefined ? undefined : base.get(op.resourceId);
    if (!b || (op.type !== 'move' && op.type !== 'update')) return;
    const next = op.type === 'move' ? { ...b, parentId: op.payload.parentId ?? '' } : { ...b, name: op.payload.name };
    base.set(b.id, next);
    j.putBase(next);
  });
  j.clearOutbox(pending.map((p) => p.opId));
}

/**
 * The push half of a pass: sends what changed on disk since the merge base, for every resource
 * the server has not changed since (those wait for the next pull): folder creates, moves, renames,
 * new files, edits (If-Match the base), then deletions, each with the rev last seen as `baseRev`.
 */
export async function pushLocal(ctx: SyncContext, remote: Map<string, RemoteNode>, base: Map<string, BaseNode>, matched: Matched): Promise<number> {
  const live = new LiveTree(matched);
  const j = ctx.journal;
  const say = (m: string) => ctx.reporter.line(m);
  const skipped = new Set<string>();
  const folders: LocalNode[] = [];
  const files: LocalNode[] = [];
  const targets = new Map<string, Place>();
  const edits: { node: LocalNode; sha256: string; b: BaseNode }[] = [];
  const path = (id: string) => live.path(id) ?? id;

  for (const id of byDepth(matched.local)) {
    const l = matched.local.get(id)!;
    if (skipped.has(l.parentId)) {
      skipped.add(id);
      continue;
    }
    const problem = nameProblem(l.name);
    if (l.isNew) {
      if (problem) {
        ctx.reporter.error(`skipped ${path(id)}: the name ${problem}`);
        skipped.add(id);
      } else (l.entry.type === 'folder' ? folders : files).push(l);
      continue;
    }
    const b = base.get(id)!;
    const rn = remote.get(id);
    if (!rn || remoteChanged(rn, b)) continue;
    if (l.parentId !== b.parentId || l.name !== b.name) {
      if (problem && l.name !== b.name) ctx.reporter.error(`skipped renaming ${path(id)}: the name ${problem}`);
      targets.set(id, { parentId: l.parentId, name: problem ? b.name : l.name });
    }
    if (b.type === 'file') {
      if (ctx.deferRacy && b.racy && l.entry.racy && l.entry.size >= DELTA_THRESHOLD && l.entry.size === b.size && l.entry.mtimeMs === b.mtimeMs && l.entry.ino === b.ino) {
        // Most likely the bytes just sent: proven by a pass once the mtime can vouch, off the way of what follows.
        ctx.recheckLater = true;
        continue;
      }
      // Most files of a pass are as the base left them: known without a turn of the event loop.
      const sha = vouchedSha(ctx, l.entry, b) ?? (await localSha(ctx, l.entry, b));
      if (sha !== b.sha256) edits.push({ node: l, sha256: sha, b });
      else if (l.entry.mtimeMs !== b.mtimeMs || l.entry.ino !== b.ino || l.entry.racy !== Boolean(b.racy)) {
        j.putBase({ ...b, mtimeMs: l.entry.mtimeMs, ino: l.entry.ino, racy: l.entry.racy });
      }
    } else if (l.entry.ino !== b.ino) j.putBase({ ...b, ino: l.entry.ino, mtimeMs: l.entry.mtimeMs });
  }

  // Deletions: a folder goes whole only when the server holds nothing under it this device has not seen.
  const deleting = new Set<string>();
  const remoteChildren = new Map<string, string[]>();
  for (const rn of remote.values()) {
    const list = remoteChildren.get(rn.parentId);
    if (list) list.push(rn.id);
    else remoteChildren.set(rn.parentId, [rn.id]);
  }
  const allSeen = (id: string): boolean =>
    (remoteChildren.get(id) ?? []).every((c) => {
      const b = base.get(c);
      return b !== undefined && !remoteChanged(remote.get(c)!, b) && !matched.local.has(c) && allSeen(c);
    });
  for (const id of byDepth(base)) {
    const b = base.get(id)!;
    const rn = remote.get(id);
    if (matched.local.has(id) || matched.unknown.has(id) || !rn || remoteChanged(rn, b) || deleting.has(b.parentId)) continue;
    if (b.type === 'folder' && !allSeen(id)) continue;
    deleting.add(id);
  }
  const underDeleted = (id: string): boolean => {
    for (let cur = remote.get(id); cur; cur = remote.get(cur.parentId)) if (deleting.has(cur.id)) return true;
    return false;
  };
  const remoteFiles = [...remote.values()].filter((n) => n.type === 'file');
  checkGuard(ctx, 'server', remoteFiles.filter((n) => underDeleted(n.id)).length, remoteFiles.length);

  let actions = 0;
  const put = (n: RemoteNode, entry: { mtimeMs: number; ino: number; racy: boolean } | undefined) => {
    j.putRemote(n);
    j.putBase(toBase(n, entry));
  };
  const newRev = (a: AppliedOp, before: number) => (typeof a.rev === 'number' ? a.rev : before);

  const created = new Set<string>();
  const onServer = (id: string) => id === '' || remote.has(id) || created.has(id);
  const creates: SyncOp[] = folders.filter((f) => onServer(f.parentId) || folders.some((p) => p.id === f.parentId)).map((f) => ({
    opId: j.nextOpId(), type: 'create', resourceId: f.id, payload: { resourceType: 'folder', name: f.name, parentId: f.parentId || null },
  }));
  actions += await sendOps(ctx, creates, (op) => path(op.resourceId!), (op, a) => {
    if (a.outcome === 'duplicate' && a.rev === null) return;
    const f = matched.local.get(op.resourceId!)!;
    created.add(f.id);
    const folder: RemoteNode = { id: f.id, parentId: f.parentId, name: f.name, type: 'folder', rev: newRev(a, 1), sha256: '', size: 0 };
    put(folder, f.entry);
    // Known to the moves below by its path: what moves into it is reported under it.
    base.set(f.id, toBase(folder, f.entry));
    say(`created ${path(f.id)}/ on the server`);
  });

  const revOf = (id: string) => j.remoteRev(id) ?? 0;
  const conditional = (id: string) => (revOf(id) > 0 ? { baseRev: revOf(id) } : {});
  actions += await sendPlaces(ctx, remote, base, targets, onServer, conditional);

  const transfer = async (label: string, fn: () => Promise<File>, done: (f: File) => void): Promise<void> => {
    try {
      done(await fn());
      actions++;
    } catch (err) {
      // Left to the pass that the end of the write brings (firstLook asked for a recheck).
      if (err instanceof StillWritingError) return;
      if (!(err instanceof ApiError)) throw err;
      if (err.code === 'QUOTA_EXCEEDED' || err.status === 507) {
        say(`quota exceeded: ${label}`);
        ctx.quotaExceeded = true;
      } else if (err.code === 'INVALID_REQUEST' || err.code === 'FILE_TOO_LARGE' || err.status === 413) {
        ctx.reporter.error(`skipped ${label}: ${err.message}`);
        // Over the service's upload limit: left unsent, so `--once` is not in sync (exit 1).
        if (err.code !== 'INVALID_REQUEST') ctx.unsent = true;
      }
      else if (['NAME_CONFLICT', 'PRECONDITION_FAILED', 'NOT_FOUND', 'RATE_LIMITED'].includes(err.code)) ctx.pending++;
      else throw err;
    }
  };
  const fileOf = (f: File, sha: string): RemoteNode =>
    ({ id: f.id, parentId: f.folderId, name: f.name, type: 'file', rev: f.rev, sha256: f.sha256 ?? sha, size: f.size });
  const queue = files.filter((f) => onServer(f.parentId));
  const worker = async () => {
    for (let f = queue.shift(); f && !ctx.signal.aborted; f = queue.shift()) {
      const node = f;
      // The second look at a fresh file is taken while its bytes stream, before the upload commits.
      const look = await firstLook(ctx, node.entry);
      if (look.moving) continue;
      const label = path(node.id);
      // Read once: the service hashes what it receives, and the journal records the digest it answers.
      const { size, mtimeMs } = node.entry;
      await transfer(label, () => ctx.transfers.uploadNew({ id: node.id, diskPath: node.entry.disk, path: label, name: node.name, folderId: node.parentId, size, mtimeMs, settled: look.settled }), (file) => {
        put(fileOf(file, file.sha256 ?? ''), node.entry);
        say(`uploaded ${label}`);
      });
    }
  };
  // Small new files go many to a request, beside the large ones, which go one by one.
  const refuse = (item: BatchItem, err: ApiError) => transfer(path(item.node.id), () => Promise.reject(err), () => undefined);
  const small = batches(queue.filter((f) => f.entry.size <= BULK_FILE_MAX), (f) => f.entry.size);
  const batched = new Set(small.flat());
  queue.splice(0, queue.length, ...queue.filter((f) => !batched.has(f)));
  const newBatches = small.map((batch) => batch.map((node): BatchItem => ({
    node,
    header: { id: node.id, name: node.name, folderId: node.parentId || undefined },
    done: (file) => {
      put(fileOf(file, file.sha256 ?? ''), node.entry);
      say(`uploaded ${path(node.id)}`);
    },
  })));
  const [sentNew] = await Promise.all([sendBatches(ctx, newBatches, (item) => queue.push(item.node), refuse), worker(), worker(), worker(), worker()]);
  if (queue.length) await Promise.all([worker(), worker(), worker(), worker()]);
  actions += sentNew;

  // Edits of small files too, as replacements of the base's bytes (If-Match); the rest one by one.
  const editDone = (e: (typeof edits)[number], label: string) => (file: File) => {
    const current = j.baseOf(e.node.id) ?? e.b;
    put({ ...fileOf(file, e.sha256), parentId: current.parentId, name: current.name }, e.node.entry);
    say(`uploaded ${label}${ctx.transfers.deltaNote(e.node.id)}`);
  };
  const smallEdits = batches(edits.filter((e) => e.node.entry.size <= BULK_FILE_MAX), (e) => e.node.entry.size);
  const editBatched = new Set(smallEdits.flat());
  const single = edits.filter((e) => !editBatched.has(e));
  const byNode = new Map(edits.map((e) => [e.node, e]));
  actions += await sendBatches(
    ctx,
    smallEdits.map((batch) => batch.map((e): BatchItem => ({
      node: e.node,
      header: e.b.sha256 ? { fileId: e.node.id, ifMatch: e.b.sha256 } : { fileId: e.node.id, ifNoneMatch: '*' },
      done: editDone(e, path(e.node.id)),
    }))),
    (item) => single.push(byNode.get(item.node)!),
    refuse,
  );
  for (const e of single) {
    if (ctx.signal.aborted) break;
    if (await stillWriting(ctx, e.node.entry)) continue;
    const label = path(e.node.id);
    await transfer(label, () => ctx.transfers.uploadEdit({ id: e.node.id, diskPath: e.node.entry.disk, path: label, sha256: e.sha256, size: e.node.entry.size, ifMatch: e.b.sha256 }), editDone(e, label));
  }

  const deleteOps: SyncOp[] = [...deleting].map((id) => ({ opId: j.nextOpId(), type: 'delete', resourceId: id, ...conditional(id) }));
  actions += await sendOps(ctx, deleteOps, (op) => op.resourceId!, (op) => {
    const id = op.resourceId!;
    const doomed = [...remote.values()].filter((n) => n.id === id || underDeletedBy(remote, n.id, id)).map((n) => n.id);
    for (const d of [id, ...doomed]) {
      j.dropRemote(d);
      j.dropBase(d);
    }
    say(`deleted ${pathOfBase(base, id)} on the server`);
  });
  return actions;
}

/** Renames and moves, ordered by planPlaces so that swapped names converge in one pass. */
async function sendPlaces(
  ctx: SyncContext,
  remote: Map<string, RemoteNode>,
  base: Map<string, BaseNode>,
  targets: Map<string, Place>,
  onServer: (id: string) => boolean,
  conditional: (id: string) => { baseRev?: number },
): Promise<number> {
  const j = ctx.journal;
  const current = new Map<string, Place>([...remote.values()].map((n) => [n.id, { parentId: n.parentId, name: n.name }]));
  // A target folder the server does not hold yet (its create failed): the node only changes its name.
  for (const [id, t] of targets) if (!onServer(t.parentId)) targets.set(id, { parentId: current.get(id)?.parentId ?? t.parentId, name: t.name });
  const batches = planPlaces(current, targets);
  const last = new Map<string, PlaceStep>();
  for (const b of batches) for (const s of b) last.set(s.id, s);
  const from = new Map([...last.keys()].map((id) => [id, pathOfBase(base, id)]));
  let done = 0;
  for (const batch of batches) {
    const ops: SyncOp[] = batch.map((s): SyncOp =>
      s.type === 'move'
        ? { opId: j.nextOpId(), type: 'move', resourceId: s.id, ...conditional(s.id), payload: { parentId: s.parentId || null } }
        : { opId: j.nextOpId(), type: 'update', resourceId: s.id, ...conditional(s.id), payload: { name: s.name } },
    );
    const before = ctx.pending;
    const applied = await sendOps(ctx, ops, (op) => from.get(op.resourceId!) ?? op.resourceId!, (op, a) => {
      const s = batch.find((x) => x.id === op.resourceId)!;
      const b = base.get(s.id)!;
      const rev = typeof a.rev === 'number' ? a.rev : j.remoteRev(s.id) ?? b.rev;
      const next = s.type === 'move' ? { ...b, parentId: s.parentId, rev } : { ...b, name: s.name, rev };
      base.set(s.id, next);
      j.putBase(next);
      j.putRemote({ ...(remote.get(s.id) ?? b), parentId: next.parentId, name: next.name, rev });
      if (last.get(s.id) !== s) return;
      const moved = next.parentId !== remote.get(s.id)?.parentId;
      ctx.reporter.line(`${moved ? 'moved' : 'renamed'} ${from.get(s.id)} -> ${pathOfBase(base, s.id)}`);
    });
    done += applied;
    if (applied < ops.length || ctx.pending !== before) break;
  }
  return done;
}

function underDeletedBy(remote: Map<string, RemoteNode>, id: string, ancestor: string): boolean {
  for (let cur = remote.get(id); cur; cur = remote.get(cur.parentId)) if (cur.parentId === ancestor) return true;
  return false;
}

function pathOfBase(base: Map<string, BaseNode>, id: string): string {
  const names: string[] = [];
  for (let cur = base.get(id); cur && names.length < 4096; cur = base.get(cur.parentId)) names.push(cur.name);
  return names.reverse().join('/');
}
