#!/usr/bin/env bash
# Proves that README's run command still builds with NODE_ENV=production in the shell (npm ci then
# leaves out devDependencies, where TypeScript lives, unless told otherwise). Copies the sources to a
# temporary folder, runs the install step of README's command there exactly as written, with
# NODE_ENV=production, then `npm run build`, and checks the gateway and worker were compiled.
# Not part of `npm test` (a real install takes a minute or two): `npm run check:install`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The install step: the first command of the README's run line, up to the first "&&".
install=$(awk '/^## Run it/{f=1} f && /^npm ci/{print; exit}' "$root/README.md" | sed 's/ *&&.*//')
[ -n "$install" ] || { echo "check-production-install: no 'npm ci' run line under '## Run it' in README.md"; exit 1; }

cp -r "$root/package.json" "$root/package-lock.json" "$root"/tsconfig*.json "$root/shared" "$root/services" "$work/"
# The client workspace: npm ci links it and the build compiles it (its sources only, not its build output).
mkdir "$work/clients"
cp -r "$root/clients/package.json" "$root/clients/tsconfig.json" "$root/clients/bin" "$root/clients/src" "$work/clients/"
cd "$work"
echo "check-production-install: NODE_ENV=production $install"
NODE_ENV=production bash -c "$install --no-audit --no-fund" >/dev/null
NODE_ENV=production npm run build >/dev/null
for main in dist/services/gateway/main.js dist/services/worker/main.js dist/launcher/services/launcher/main.js; do
  [ -f "$main" ] || { echo "check-production-install: $main was not built"; exit 1; }
done
echo "check-production-install: ok (built with NODE_ENV=production)"
