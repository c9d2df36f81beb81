import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Every relative module a file imports, requires or re-exports, resolved from the repository's root. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import|require)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
  return specs.map((s) => path.relative(ROOT, path.resolve(path.dirname(file), s)));
}

describe('layering', () => {
  test('shared/ never imports from services/ (the services build on shared, not the other way)', () => {
    const upward = sources('shared').flatMap((f) => importsOf(f).filter((m) => m.startsWith(`services${path.sep}`)).map((m) => `${path.relative(ROOT, f)} -> ${m}`));
    expect(upward).toEqual([]);
  });

  test('shared/protocol imports nothing outside itself, so the client compiles without the server', () => {
    const outside = sources(path.join('shared', 'protocol')).flatMap((f) => importsOf(f).filter((m) => !m.startsWith(path.join('shared', 'protocol'))).map((m) => `${path.relative(ROOT, f)} -> ${m}`));
    expect(outside).toEqual([]);
  });
});
