import { buildWebApp } from './bundle.build';

/** `npm run build`'s last step: the web app's bundles into dist/webapp. */
buildWebApp().then(
  (files) => process.stdout.write(`web app: ${files.join(', ')}\n`),
  (err: unknown) => {
    process.stderr.write(`web app build failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
