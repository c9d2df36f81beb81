import { promises as fs } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { webAppOutDir, webAppSourceDir } from './webapp.paths';

/** The page every app address answers with; the script and style names carry their content hash. */
function indexHtml(script: string, style: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>filesync</title>
<link rel="stylesheet" href="/app/${style}">
<script type="module" src="/app/${script}"></script>
</head>
<body>
<div id="app"></div>
<noscript>filesync needs JavaScript.</noscript>
</body>
</html>
`;
}

/**
 * Bundles the web app with esbuild: one ES module (Preact, htm, signals; the upload library split
 * into a chunk loaded on the first upload), one style sheet, names hashed by content, each also
 * gzipped beside it for browsers that accept it, and index.html naming them.
 */
export async function buildWebApp(outDir = webAppOutDir(), sourceDir = webAppSourceDir()): Promise<string[]> {
  const staging = `${outDir}.${process.pid}.tmp`;
  await fs.rm(staging, { recursive: true, force: true });
  const result = await build({
    entryPoints: [path.join(sourceDir, 'main.js'), path.join(sourceDir, 'app.css')],
    bundle: true,
    splitting: true,
    format: 'esm',
    minify: true,
    target: ['chrome110', 'firefox115', 'safari16'],
    outdir: staging,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    metafile: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const entry = (source: string) => path.basename(outputs.find(([, o]) => o.entryPoint?.endsWith(source))?.[0] ?? '');
  await fs.writeFile(path.join(staging, 'index.html'), indexHtml(entry('main.js'), entry('app.css')));
  const files = await fs.readdir(staging);
  for (const file of files) await fs.writeFile(path.join(staging, `${file}.gz`), gzipSync(await fs.readFile(path.join(staging, file)), { level: 9 }));
  // Swapped in whole, so a gateway reading the folder never sees half a build.
  await fs.rm(outDir, { recursive: true, force: true });
  try {
    await fs.rename(staging, outDir);
  } catch (err) {
    // Another build finished first between the two steps; its output is the same.
    await fs.rm(staging, { recursive: true, force: true });
    if ((err as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return files;
}
