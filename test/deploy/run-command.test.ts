import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * With NODE_ENV=production in the shell, plain `npm ci` leaves out devDependencies (TypeScript) and
 * `npm start` cannot build. The documented commands therefore ask for them explicitly; the real
 * install is proven by `npm run check:install` (scripts/check-production-install.sh), which runs
 * README's install step in a scratch folder with NODE_ENV=production and builds.
 */
const root = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

test("README's run command installs the build tools whatever NODE_ENV says", () => {
  const runIt = read('README.md').split('## Run it')[1]!.split('\n## ')[0]!;
  const command = /```sh\n(npm ci[^\n]*)\n```/.exec(runIt)?.[1];
  expect(command).toMatch(/^npm ci --include=dev && .*npm start$/);
});

test('the operations guide and CI install the same way', () => {
  expect(read('docs/OPERATIONS.md')).toContain('npm ci --include=dev && npm start');
  expect(read('.ci/run')).toMatch(/^npm ci --include=dev\b/m);
});

test('npm run check:install runs the proof script', () => {
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  expect(pkg.scripts['check:install']).toBe('bash scripts/check-production-install.sh');
  expect(read('scripts/check-production-install.sh')).toContain('NODE_ENV=production');
});
