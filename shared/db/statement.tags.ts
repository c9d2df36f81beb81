/**
 * Statements that tests, the bench and an operator reading the server's processlist pick out by name:
 * each leads with the comment `/* filesync:<name> *\/`, which MariaDB and MySQL keep in
 * information_schema.PROCESSLIST (INFO) and knex passes to its 'query' events. A statement reworded
 * keeps its name, so what watches for it still finds it.
 */
export const STATEMENTS = {
  /** InboxRepository.accept: the autocommit INSERT ... SELECT ... FOR UPDATE that records a batch. */
  acceptBatch: 'accept-batch',
  /** InboxRepository.lockPending: a device's pending batches, locked. */
  lockPending: 'lock-pending',
  /** InboxRepository.lockOwnerAndPending: the owner's row and the device's pending batches, locked together. */
  lockOwnerAndPending: 'lock-owner-and-pending',
  /** OwnerTransactions: the owner's row, locked first by every tree writer. */
  lockOwner: 'lock-owner',
  /** UserRepository.findPrincipal: a token's user and device, on every authenticated request. */
  findPrincipal: 'find-principal',
} as const;

export type StatementName = (typeof STATEMENTS)[keyof typeof STATEMENTS];

/** The text of a statement's tag, as knex's `.comment()` takes it (it adds the comment markers). */
export const tagText = (name: StatementName): string => `filesync:${name}`;

/** The comment a tagged statement starts with, exactly as the server and knex show it. */
export const statementTag = (name: StatementName): string => `/* ${tagText(name)} */`;

/** A statement without its leading comment, so its first word is its verb. */
export const withoutTag = (sql: string): string => sql.replace(/^\s*\/\*.*?\*\/\s*/s, '');
