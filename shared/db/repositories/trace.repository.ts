import type { Knex } from 'knex';

/** The record of one applied outbox operation; its key makes a replay detectable. */
export interface OperationTrace {
  deviceId: string;
  /** Decimal string of a signed 64-bit integer. */
  operationId: string;
  userId: string;
  opType: string;
  refType: string | null;
  refId: string | null;
  resourceId: string | null;
  /** JSON text of an object. */
  payload: string;
  createdAt: Date;
}

const CHUNK = 500;

export class TraceRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  withTransaction(trx: Knex.Transaction): TraceRepository {
    return new TraceRepository(trx);
  }

  /** Which of these operation ids this device has already processed, as decimal strings. */
  async processed(deviceId: string, operationIds: string[]): Promise<Set<string>> {
    const done = new Set<string>();
    const unique = [...new Set(operationIds)];
    for (let i = 0; i < unique.length; i += CHUNK) {
      const rows = await this.db('operation_traces')
        .where({ device_id: deviceId })
        .whereIn('operation_id', unique.slice(i, i + CHUNK))
        .select<{ operation_id: string }[]>('operation_id');
      for (const r of rows) done.add(String(r.operation_id));
    }
    return done;
  }

  async insertMany(traces: OperationTrace[]): Promise<void> {
    for (let i = 0; i < traces.length; i += CHUNK) {
      await this.db('operation_traces').insert(
        traces.slice(i, i + CHUNK).map((t) => ({
          device_id: t.deviceId,
          operation_id: t.operationId,
          user_id: t.userId,
          op_type: t.opType,
          ref_type: t.refType,
          ref_id: t.refId,
          resource_id: t.resourceId,
          payload: t.payload,
          created_at: t.createdAt,
        })),
      );
    }
  }
}
