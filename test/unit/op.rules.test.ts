import { decideOp, revOf, type OpView } from '../../services/worker/op.rules';
import type { ResourceState } from '../../shared/db/repositories/resource.record';
import { AppError } from '../../shared/errors';
import { parseLossless } from '../../shared/json';
import { parseOp, type ParsedOp } from '../../shared/sync/ops';

const ME = 'a'.repeat(32);
const OTHER = 'b'.repeat(32);
const id = (c: string) => c.repeat(32);
const FOLDER = id('1');
const FILE = id('2');
const GONE = id('3');
const THEIRS = id('4');
const SUB = id('5');
const NEW = id('9');

/** An op as the worker receives it: JSON text through the batch's parser. */
function op(json: Record<string, unknown>): ParsedOp {
  const parsed = parseOp(parseLossless(JSON.stringify({ opId: 1, ...json })));
  if (!parsed.ok) throw parsed.error;
  return parsed.op;
}

function batch(): OpView {
  const states = new Map<string, ResourceState>();
  const add = (s: Omit<ResourceState, 'deleted'> & { deleted?: boolean }) => states.set(s.id, { deleted: false, ...s });
  add({ id: FOLDER, userId: ME, parentId: null, type: 'folder', rev: 3 });
  add({ id: SUB, userId: ME, parentId: FOLDER, type: 'folder', rev: 1 });
  add({ id: FILE, userId: ME, parentId: FOLDER, type: 'file', rev: 5 });
  add({ id: GONE, userId: ME, parentId: null, type: 'file', rev: 7, deleted: true });
  add({ id: THEIRS, userId: OTHER, parentId: null, type: 'folder', rev: 2 });
  return { userId: ME, states };
}

/** The refusal an op gets: its code, status and details. */
function refusal(o: ParsedOp, ctx = batch()): Pick<AppError, 'code' | 'status' | 'details'> {
  try {
    decideOp(o, ctx);
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, status: err.status, details: err.details };
    throw err;
  }
  throw new Error('the op was not refused');
}

describe('create', () => {
  const create = (parentId: string | null, resourceId = NEW) => op({ type: 'create', resourceId, payload: { resourceType: 'file', name: 'a.txt', parentId } });

  test('creates under the root or under one of the caller\'s active folders', () => {
    expect(decideOp(create(null), batch())).toMatchObject({ kind: 'create' });
    expect(decideOp(create(FOLDER), batch())).toMatchObject({ kind: 'create' });
  });

  test('an id the caller already has (active or deleted) is a no-op: the op was applied before', () => {
    expect(decideOp(create(null, FILE), batch())).toEqual({ kind: 'noop' });
    expect(decideOp(create(null, GONE), batch())).toEqual({ kind: 'noop' });
  });

  test('an id another user has is refused with 400, without saying whose', () => {
    expect(refusal(create(null, THEIRS))).toMatchObject({ code: 'INVALID_REQUEST', status: 400 });
  });

  test('a parent that is missing, deleted, a file or another user\'s folder is 404', () => {
    for (const parent of [id('8'), GONE, FILE, THEIRS]) expect(refusal(create(parent))).toMatchObject({ code: 'NOT_FOUND', status: 404 });
  });
});

describe('update, move and delete', () => {
  test('act on the caller\'s active resource', () => {
    expect(decideOp(op({ type: 'update', resourceId: FILE, payload: { name: 'b.txt' } }), batch())).toMatchObject({ kind: 'rename', name: 'b.txt', state: { id: FILE } });
    expect(decideOp(op({ type: 'move', resourceId: FILE, payload: { parentId: null } }), batch())).toMatchObject({ kind: 'move', parentId: null, state: { id: FILE } });
    expect(decideOp(op({ type: 'delete', resourceId: FOLDER }), batch())).toMatchObject({ kind: 'delete', state: { id: FOLDER, type: 'folder' } });
  });

  test('a resource that is missing, deleted or another user\'s is a no-op', () => {
    for (const target of [id('8'), GONE, THEIRS]) {
      expect(decideOp(op({ type: 'update', resourceId: target, payload: { name: 'x' } }), batch())).toEqual({ kind: 'noop' });
      expect(decideOp(op({ type: 'move', resourceId: target, payload: { parentId: null } }), batch())).toEqual({ kind: 'noop' });
      expect(decideOp(op({ type: 'delete', resourceId: target }), batch())).toEqual({ kind: 'noop' });
    }
  });

  test('a baseRev other than the resource\'s rev is 412 with the rev and whether it is deleted', () => {
    expect(refusal(op({ type: 'update', resourceId: FILE, baseRev: 4, payload: { name: 'x' } }))).toEqual({
      code: 'PRECONDITION_FAILED',
      status: 412,
      details: { rev: 5, deleted: false },
    });
    // Deleted resources keep their rev: an op against an old one says so, rather than a silent no-op.
    expect(refusal(op({ type: 'delete', resourceId: GONE, baseRev: 6 }))).toMatchObject({ details: { rev: 7, deleted: true } });
    expect(decideOp(op({ type: 'delete', resourceId: FILE, baseRev: 5 }), batch())).toMatchObject({ kind: 'delete' });
  });

  test('a baseRev on a resource the caller does not have is left to the op\'s own rule: a no-op', () => {
    expect(decideOp(op({ type: 'update', resourceId: THEIRS, baseRev: 1, payload: { name: 'x' } }), batch())).toEqual({ kind: 'noop' });
    expect(decideOp(op({ type: 'move', resourceId: id('8'), baseRev: 1, payload: { parentId: null } }), batch())).toEqual({ kind: 'noop' });
  });

  test('a move into a missing, deleted, file or foreign parent is 404', () => {
    for (const parent of [id('8'), GONE, FILE, THEIRS]) {
      expect(refusal(op({ type: 'move', resourceId: SUB, payload: { parentId: parent } }))).toMatchObject({ code: 'NOT_FOUND' });
    }
  });

  test('only a folder moved under a folder needs the cycle check', () => {
    expect(decideOp(op({ type: 'move', resourceId: SUB, payload: { parentId: FOLDER } }), batch())).toMatchObject({ checkCycle: true });
    expect(decideOp(op({ type: 'move', resourceId: SUB, payload: { parentId: null } }), batch())).toMatchObject({ checkCycle: false });
    expect(decideOp(op({ type: 'move', resourceId: FILE, payload: { parentId: SUB } }), batch())).toMatchObject({ checkCycle: false });
  });
});

test('share and share_link change nothing', () => {
  expect(decideOp(op({ type: 'share', resourceId: FILE }), batch())).toEqual({ kind: 'noop' });
  expect(decideOp(op({ type: 'share_link', resourceId: FILE }), batch())).toEqual({ kind: 'noop' });
});

test('a result reports the rev of the caller\'s resource, deleted too, and null for anything else', () => {
  const ctx = batch();
  expect([revOf(ctx, FILE), revOf(ctx, GONE), revOf(ctx, THEIRS), revOf(ctx, id('8')), revOf(ctx, null)]).toEqual([5, 7, null, null, null]);
});
