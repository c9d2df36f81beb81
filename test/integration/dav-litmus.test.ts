import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type TestStack } from '../support/stack';
import { createAppPassword, run } from '../support/dav';

/**
 * The WebDAV conformance suite litmus (Debian package `litmus`, installed by .ci/run) against the
 * service: every test of its five groups must pass, as with Apache's mod_dav.
 */
describe('WebDAV conformance (litmus)', () => {
  let stack: TestStack;
  let workdir: string;

  beforeAll(async () => {
    stack = await startStack();
    workdir = mkdtempSync(path.join(os.tmpdir(), 'litmus-'));
  });
  afterAll(async () => {
    await stack.close();
    rmSync(workdir, { recursive: true, force: true });
  });

  test('litmus passes every test of basic, copymove, props, locks and http', async () => {
    const password = await createAppPassword(stack.admin, 'litmus');
    // litmus writes debug.log into its working directory. `--`: a password may begin with '-', which
    // the test programs' option parser would otherwise take for an option.
    const { code, output } = await run('litmus', ['--', `${stack.gateway.baseUrl}/dav/`, 'admin', password.password], { TESTS: 'basic copymove props locks http' }, workdir);
    const summaries = [...output.matchAll(/summary for `(\w+)': of (\d+) tests run: (\d+) passed, (\d+) failed/g)].map((m) => ({
      group: m[1],
      run: Number(m[2]),
      passed: Number(m[3]),
    }));
    const lines = output.split('\n');
    // A group that ends badly without a FAIL line (a crash, an abort) shows its last lines.
    const tail = code === 0 ? [] : lines.filter((l) => !/\.\.\. *pass$/.test(l)).slice(-40);
    expect({ code, failures: lines.filter((l) => /FAIL|WARNING/.test(l)), tail }).toEqual({ code: 0, failures: [], tail: [] });
    expect(summaries).toEqual([
      { group: 'basic', run: 16, passed: 16 },
      { group: 'copymove', run: 13, passed: 13 },
      { group: 'props', run: 30, passed: 30 },
      { group: 'locks', run: 41, passed: 41 },
      { group: 'http', run: 4, passed: 4 },
    ]);
  }, 300_000);
});
