import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/**
 * Runs one gateway and one worker side by side for a single machine. When either exits the other is
 * stopped and the launcher exits with the first one's code; SIGTERM and SIGINT are passed on.
 */
const services = ['gateway', 'worker'].map((name) => ({
  name,
  child: fork(path.join(__dirname, '..', name, 'main.js'), process.argv.slice(2), { stdio: 'inherit' }),
}));

let exiting = false;
const stopAll = (signal: NodeJS.Signals) => {
  for (const { child } of services) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};

for (const { child } of services) {
  child.on('exit', (code: number | null, signal: NodeJS.Signals | null) => {
    if (!exiting) {
      exiting = true;
      process.exitCode = code ?? (signal ? 1 : 0);
      stopAll('SIGTERM');
    }
    if (services.every(({ child: c }: { child: ChildProcess }) => c.exitCode !== null || c.signalCode !== null)) process.exit();
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    exiting = true;
    stopAll(signal);
  });
}
