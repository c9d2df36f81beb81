import type { Knex } from 'knex';
import type { Attempt, ModelResource } from './device';

export interface DeviceInfo {
  index: number;
  userId: string;
  deviceId: string;
  model: Map<string, ModelResource>;
}

export interface Verdict {
  /** Acknowledged ops with no trace, and resources whose state in MySQL differs from the client's model. */
  lost: number;
  lostOps: number;
  stateMismatches: number;
  /** Ops reported `applied` in more than one response. */
  doubled: number;
  /** Batches of a device applied out of acceptance order or overlapping. */
  orderViolations: number;
  /** Requests with no answer within the timeout and margin. */
  hung: number;
  /** 200s whose batch is not `done` in MySQL, or 503s for batches left pending. */
  inconsistent: number;
  /** 200 answers that reported a failed op (none expected: every op is valid). */
  unexpectedFailures: number;
  examples: string[];
}

/** Compares every answer the devices got with what MySQL holds. */
export async function verify(db: Knex, devices: DeviceInfo[], attempts: Attempt[]): Promise<Verdict> {
  const v: Verdict = { lost: 0, lostOps: 0, stateMismatches: 0, doubled: 0, orderViolations: 0, hung: 0, inconsistent: 0, unexpectedFailures: 0, examples: [] };
  const note = (s: string) => v.examples.length < 20 && v.examples.push(s);
  v.hung = attempts.filter((a) => a.status === -1).length;

  for (const d of devices) {
    const mine = attempts.filter((a) => a.device === d.index);
    const traces = new Set(await db('operation_traces').where({ device_id: d.deviceId }).pluck('operation_id').then((ids) => ids.map(String)));
    const appliedIn = new Map<string, number>();
    for (const a of mine.filter((x) => x.status === 200)) {
      if (a.failed) {
        v.unexpectedFailures++;
        note(`device ${d.index} ${a.requestId}: failed ${JSON.stringify(a.failed)}`);
      }
      for (const [opId, outcome] of Object.entries(a.outcomes ?? {})) {
        if (!traces.has(opId)) {
          v.lostOps++;
          note(`device ${d.index} ${a.requestId}: op ${opId} acknowledged ${outcome} but has no trace`);
        }
        if (outcome === 'applied') appliedIn.set(opId, (appliedIn.get(opId) ?? 0) + 1);
      }
    }
    for (const [opId, n] of appliedIn) {
      if (n > 1) {
        v.doubled++;
        note(`device ${d.index}: op ${opId} reported applied ${n} times`);
      }
    }

    // MySQL against the client's model of its tree.
    const rows = await db('resources').where({ user_id: d.userId }).select('id', 'parent_id', 'name', 'type', 'deleted_at');
    const stored = new Map(rows.map((r) => [r.id as string, r]));
    for (const m of d.model.values()) {
      const r = stored.get(m.id);
      const same = r && r.parent_id === m.parentId && r.name === m.name && r.type === m.type && (r.deleted_at !== null) === m.deleted;
      if (!same) {
        v.stateMismatches++;
        note(`device ${d.index}: resource ${m.id} is ${r ? JSON.stringify({ parent: r.parent_id, name: r.name, deleted: r.deleted_at !== null }) : 'missing'}, expected ${JSON.stringify({ parent: m.parentId, name: m.name, deleted: m.deleted })}`);
      }
    }
    for (const r of rows) {
      if (!d.model.has(r.id)) {
        // A resource the client never had acknowledged: only possible for a batch answered 503 that applied later,
        // whose retry then reported it `duplicate`, which the model follows. Anything else is an extra.
        v.stateMismatches++;
        note(`device ${d.index}: resource ${r.id} exists but was never acknowledged`);
      }
    }

    // Order: done batches in id order must be in the client's sending order, applied one after the other.
    const batches = await db('sync_batches').where({ device_id: d.deviceId }).orderBy('id').select('id', 'status', 'request_id', 'created_at', 'finished_at');
    const seqOf = (requestId: string) => Number(/-s(\d+)-/.exec(requestId)?.[1] ?? -1);
    let lastSeq = -1;
    let lastFinished = 0;
    for (const b of batches.filter((x) => x.status === 'done')) {
      const seq = seqOf(b.request_id);
      const finished = (b.finished_at as Date).getTime();
      if (seq < lastSeq || finished < lastFinished) {
        v.orderViolations++;
        note(`device ${d.index}: batch ${b.id} (${b.request_id}) applied out of order`);
      }
      lastSeq = Math.max(lastSeq, seq);
      lastFinished = Math.max(lastFinished, finished);
    }
    const byRequest = new Map(batches.map((b) => [b.request_id as string, b]));
    for (const a of mine) {
      const b = byRequest.get(a.requestId);
      if (a.status === 200 && b?.status !== 'done') {
        v.inconsistent++;
        note(`device ${d.index} ${a.requestId}: answered 200 but the batch is ${b?.status ?? 'missing'}`);
      }
      if (b?.status === 'pending') {
        v.inconsistent++;
        note(`device ${d.index} ${a.requestId}: batch still pending at the end`);
      }
    }
  }
  v.lost = v.lostOps + v.stateMismatches;
  return v;
}
