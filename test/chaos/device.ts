import { randomBytes } from 'node:crypto';

/** One resource as the device believes it is, from the batches the service acknowledged. */
export interface ModelResource {
  id: string;
  type: 'file' | 'folder';
  parentId: string | null;
  name: string;
  deleted: boolean;
}

/** Every HTTP attempt a device made, and what came back. */
export interface Attempt {
  device: number;
  seq: number;
  attempt: number;
  requestId: string;
  sentAt: number;
  answeredAt: number;
  /** HTTP status, 0 for a connection error, -1 for no answer in time (hung). */
  status: number;
  /** opId -> outcome, for a 200. */
  outcomes?: Record<string, string>;
  failed?: unknown;
}

export interface DeviceOptions {
  index: number;
  baseUrl: () => string;
  token: string;
  /** Longest wait for an answer before the attempt counts as hung. */
  hangMs: number;
  record: (a: Attempt) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const id = () => randomBytes(16).toString('hex');

/**
 * A device with an outbox: it sends one batch at a time and resends the same batch (same opIds)
 * until it gets a 200, as a real client does. Its model of the tree follows only acknowledged
 * batches, so at the end it must equal what MySQL holds.
 */
export class ChaosDevice {
  readonly model = new Map<string, ModelResource>();
  private nextOpId = 1;
  private nextName = 1;
  seq = 0;
  busy = false;

  constructor(private readonly o: DeviceOptions) {}

  /** Runs until `stop()` says so, then finishes the batch in hand (resending as needed). */
  async run(stop: () => boolean, drainUntil: () => number): Promise<void> {
    while (!stop()) {
      const ops = this.nextBatch();
      this.seq++;
      this.busy = true;
      const ok = await this.deliver(ops, drainUntil);
      this.busy = false;
      if (!ok) return;
      await sleep(20 + Math.random() * 80);
    }
  }

  private async deliver(ops: Op[], drainUntil: () => number): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      if (Date.now() > drainUntil()) return false;
      const requestId = `d${this.o.index}-s${this.seq}-a${attempt}`;
      const sentAt = Date.now();
      const a: Attempt = { device: this.o.index, seq: this.seq, attempt, requestId, sentAt, answeredAt: 0, status: 0 };
      try {
        const res = await fetch(`${this.o.baseUrl()}/v1/sync/ops`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.o.token}`, 'content-type': 'application/json', 'x-request-id': requestId },
          body: JSON.stringify({ ops }),
          signal: AbortSignal.timeout(this.o.hangMs),
        });
        a.status = res.status;
        const body = (await res.json()) as { applied?: { opId: number; outcome: string }[]; failed?: unknown };
        if (res.status === 200) {
          a.outcomes = Object.fromEntries((body.applied ?? []).map((x) => [String(x.opId), x.outcome]));
          a.failed = body.failed ?? null;
        }
      } catch (err) {
        a.status = (err as Error).name === 'TimeoutError' ? -1 : 0;
      }
      a.answeredAt = Date.now();
      this.o.record(a);
      if (a.status === 200) {
        this.acknowledge(ops);
        return true;
      }
      await sleep(a.status === 0 ? 300 : 100);
    }
  }

  /** Applies an acknowledged batch to the model (ops are generated valid against it). */
  private acknowledge(ops: Op[]): void {
    for (const op of ops) applyToModel(this.model, op);
  }

  /** 1-5 ops, each valid against the model as it will be when the ops before it applied. */
  nextBatch(): Op[] {
    const view = new Map([...this.model].map(([k, v]) => [k, { ...v }]));
    const ops: Op[] = [];
    const n = 1 + Math.floor(Math.random() * 5);
    for (let i = 0; i < n; i++) {
      const op = this.nextOp(view);
      applyToModel(view, op);
      ops.push(op);
    }
    return ops;
  }

  private nextOp(view: Map<string, ModelResource>): Op {
    const alive = [...view.values()].filter((r) => !r.deleted);
    const folders = alive.filter((r) => r.type === 'folder');
    const files = alive.filter((r) => r.type === 'file');
    const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
    const name = () => `n${this.o.index}-${this.nextName++}`;
    const opId = this.nextOpId++;
    const roll = Math.random();
    if (alive.length < 6 || roll < 0.4) {
      const type = Math.random() < 0.35 ? 'folder' : 'file';
      const parentId = folders.length > 0 && Math.random() < 0.7 ? pick(folders).id : null;
      return { opId, type: 'create', resourceId: id(), payload: { resourceType: type, name: name(), parentId } };
    }
    if (roll < 0.65) return { opId, type: 'update', resourceId: pick(alive).id, payload: { name: name() } };
    if (roll < 0.85 && files.length > 0) {
      const parentId = folders.length > 0 && Math.random() < 0.8 ? pick(folders).id : null;
      return { opId, type: 'move', resourceId: pick(files).id, payload: { parentId } };
    }
    // Deletes prefer files; a folder delete takes its subtree with it.
    const target = files.length > 0 && Math.random() < 0.8 ? pick(files) : pick(alive);
    return { opId, type: 'delete', resourceId: target.id };
  }
}

export type Op =
  | { opId: number; type: 'create'; resourceId: string; payload: { resourceType: 'file' | 'folder'; name: string; parentId: string | null } }
  | { opId: number; type: 'update'; resourceId: string; payload: { name: string } }
  | { opId: number; type: 'move'; resourceId: string; payload: { parentId: string | null } }
  | { opId: number; type: 'delete'; resourceId: string };

export function applyToModel(model: Map<string, ModelResource>, op: Op): void {
  switch (op.type) {
    case 'create':
      if (!model.has(op.resourceId)) {
        model.set(op.resourceId, { id: op.resourceId, type: op.payload.resourceType, parentId: op.payload.parentId, name: op.payload.name, deleted: false });
      }
      return;
    case 'update':
      model.get(op.resourceId)!.name = op.payload.name;
      return;
    case 'move':
      model.get(op.resourceId)!.parentId = op.payload.parentId;
      return;
    case 'delete': {
      const doomed = new Set([op.resourceId]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const r of model.values()) {
          if (!r.deleted && !doomed.has(r.id) && r.parentId !== null && doomed.has(r.parentId)) {
            doomed.add(r.id);
            grew = true;
          }
        }
      }
      for (const rid of doomed) {
        const r = model.get(rid)!;
        if (!r.deleted) r.deleted = true;
      }
      return;
    }
  }
}
