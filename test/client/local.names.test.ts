import { isSafeId, localNameProblem } from '../../clients/src/cli/local.names';

/** docs/CLIENT.md guarantee 6 ("Names"): what a local file system can hold, per platform. */
const linux = { platform: 'linux' as const, caseInsensitive: false };
const mac = { platform: 'darwin' as const, caseInsensitive: true };
const windows = { platform: 'win32' as const, caseInsensitive: true };

test('names that would leave their folder, or name it, are refused everywhere', () => {
  for (const rules of [linux, mac, windows]) {
    for (const name of ['.', '..', '', 'a/b', '../up', 'nul\0byte']) expect(localNameProblem(name, false, rules)).not.toBeNull();
    expect(localNameProblem('report.txt', false, rules)).toBeNull();
    expect(localNameProblem('..hidden', false, rules)).toBeNull();
  }
});

test('a component longer than 255 bytes is refused on Linux and macOS, counted in UTF-8 bytes', () => {
  const cjk = '文'.repeat(255);
  expect(Buffer.byteLength(cjk)).toBe(765);
  expect(localNameProblem(cjk, false, linux)).toMatch(/765 bytes/);
  expect(localNameProblem(cjk, false, mac)).toMatch(/765 bytes/);
  expect(localNameProblem('文'.repeat(85), false, linux)).toBeNull();
  expect(localNameProblem('a'.repeat(255), false, linux)).toBeNull();
  expect(localNameProblem('a'.repeat(256), false, linux)).not.toBeNull();
  // Windows counts UTF-16 units: 255 CJK characters fit there.
  expect(localNameProblem(cjk, false, windows)).toBeNull();
});

test("Windows' reserved characters, device names and trailing dots or spaces are refused only on Windows", () => {
  const refused = ['a\\b', 'a:b', 'a*b', 'a?b', 'a"b', 'a<b', 'a>b', 'a|b', 'tab\there', 'CON', 'con.txt', 'Prn', 'AUX.log', 'NUL', 'COM1', 'com9.txt', 'LPT1', 'lpt9', 'trailing.', 'trailing '];
  for (const name of refused) {
    expect([name, localNameProblem(name, false, windows)]).toEqual([name, expect.any(String)]);
    if (name !== 'tab\there') expect([name, localNameProblem(name, false, linux)]).toEqual([name, null]);
  }
  for (const name of ['console.txt', 'COM10', 'LPT', 'a.b', 'x y']) expect([name, localNameProblem(name, false, windows)]).toEqual([name, null]);
});

test("the client's own names: at the root exactly on a case-sensitive disk, ignoring case anywhere on a case-insensitive one", () => {
  expect(localNameProblem('.filesync', true, linux)).not.toBeNull();
  expect(localNameProblem('.filesyncignore', true, linux)).not.toBeNull();
  expect(localNameProblem('.FILESYNCIGNORE', true, linux)).toBeNull();
  expect(localNameProblem('.filesync', false, linux)).toBeNull();
  for (const rules of [mac, windows]) {
    for (const name of ['.FILESYNCIGNORE', '.FileSync', '.filesync', '.filesyncignore']) {
      expect(localNameProblem(name, true, rules)).not.toBeNull();
      expect(localNameProblem(name, false, rules)).not.toBeNull();
    }
    expect(localNameProblem('.filesyncignore.txt', true, rules)).toBeNull();
  }
});

test('only 32 lowercase hex characters are ids that may name a local file', () => {
  expect(isSafeId('0123456789abcdef0123456789abcdef')).toBe(true);
  for (const id of ['', '../../etc/passwd', '0123456789ABCDEF0123456789ABCDEF', '0123456789abcdef0123456789abcde', '0123456789abcdef0123456789abcdef/..', '0123456789abcdef0123456789abcde\0']) {
    expect(isSafeId(id)).toBe(false);
  }
});
