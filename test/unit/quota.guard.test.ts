import { AppError } from '../../shared/errors';
import { cannotFit, oldestToDrop, quotaExceeded } from '../../shared/quota/quota.guard';
import type { Usage } from '../../shared/quota/usage.repository';

const usage = (u: Partial<Usage>): Usage => ({ quotaBytes: 100, files: 0, trash: 0, versions: 0, uploads: 0, ...u });

describe('whether a write fits', () => {
  test('without a quota every write fits', () => {
    expect(cannotFit(usage({ quotaBytes: null, files: 10 ** 12 }), { adds: 10 ** 12 })).toBe(false);
  });

  test('files, trash and reserved uploads count; a write fits up to the quota exactly and not a byte more', () => {
    const u = usage({ files: 50, trash: 20, uploads: 10 });
    expect(cannotFit(u, { adds: 20 })).toBe(false);
    expect(cannotFit(u, { adds: 21 })).toBe(true);
  });

  test('versions do not count: they live in the room left, and make room when needed', () => {
    expect(cannotFit(usage({ files: 10, versions: 90 }), { adds: 90 })).toBe(false);
  });

  test('the content a write replaces counts as freed', () => {
    expect(cannotFit(usage({ files: 100 }), { adds: 30, frees: 30 })).toBe(false);
    expect(cannotFit(usage({ files: 100 }), { adds: 31, frees: 30 })).toBe(true);
  });

  test('a write that adds nothing fits even over the quota (a reserved upload completing, an empty file)', () => {
    expect(cannotFit(usage({ quotaBytes: 10, files: 500 }), { adds: 0 })).toBe(false);
  });
});

test('a refusal is 507 QUOTA_EXCEEDED with the quota, every stored byte (versions included) and the bytes needed', () => {
  const err = quotaExceeded(usage({ quotaBytes: 100, files: 40, trash: 10, versions: 30, uploads: 5 }), 60);
  expect(err).toBeInstanceOf(AppError);
  expect({ code: err.code, status: err.status, details: err.details }).toEqual({
    code: 'QUOTA_EXCEEDED',
    status: 507,
    details: { quotaBytes: 100, usedBytes: 85, neededBytes: 60 },
  });
});

describe('which versions make room', () => {
  const versions = [
    { id: 'oldest', sizeBytes: 10 },
    { id: 'middle', sizeBytes: 30 },
    { id: 'newest', sizeBytes: 50 },
  ];

  test('the least recently replaced go first, until the excess is gone', () => {
    expect(oldestToDrop(35, versions)).toEqual({ ids: ['oldest', 'middle'], excess: -5 });
    expect(oldestToDrop(10, versions)).toEqual({ ids: ['oldest'], excess: 0 });
  });

  test('no excess drops nothing', () => {
    expect(oldestToDrop(0, versions)).toEqual({ ids: [], excess: 0 });
  });

  test('when all of them are not enough, all go and the excess left is reported', () => {
    expect(oldestToDrop(100, versions)).toEqual({ ids: ['oldest', 'middle', 'newest'], excess: 10 });
  });
});
