import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './stack';

/**
 * Two Syncthing devices on loopback sharing one folder, each with a home of its own: GUI and REST on
 * a free 127.0.0.1 port with its own API key, listening on another free 127.0.0.1 port, each knowing
 * the other by device id at a static address. Global and local discovery, relays, NAT traversal,
 * usage and crash reporting and upgrades are off. The folder uses the file-system watcher with its
 * shortest delay (1 s) and a long rescan interval: the watcher starts a scan of what changed about a
 * second after a write, where a short rescan interval would rescan the whole folder on a timer. The
 * process keeps normal priority (`setLowPriority` off), as the filesync command does.
 */
const BIN = 'syncthing';
const FOLDER_ID = 'bench';
const WATCH_DELAY_S = 1;

interface Device {
  name: string;
  home: string;
  folder: string;
  id: string;
  apiKey: string;
  guiPort: number;
  listenPort: number;
  proc?: ChildProcess;
  output: string;
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function configOf(self: Device, peer: Device): string {
  const device = (d: Device) => `
    <device id="${d.id}" name="${d.name}" compression="metadata" introducer="false">
        <address>${d === self ? 'dynamic' : `tcp://127.0.0.1:${d.listenPort}`}</address>
        <paused>false</paused>
        <autoAcceptFolders>false</autoAcceptFolders>
    </device>`;
  return `<configuration version="36">
    <folder id="${FOLDER_ID}" label="${FOLDER_ID}" path="${xml(self.folder)}" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="true" fsWatcherDelayS="${WATCH_DELAY_S}" ignorePerms="false" autoNormalize="true">
        <filesystemType>basic</filesystemType>
        <device id="${self.id}"></device>
        <device id="${peer.id}"></device>
        <minDiskFree unit="%">1</minDiskFree>
    </folder>${device(self)}${device(peer)}
    <gui enabled="true" tls="false" debugging="false">
        <address>127.0.0.1:${self.guiPort}</address>
        <apikey>${self.apiKey}</apikey>
    </gui>
    <options>
        <listenAddress>tcp://127.0.0.1:${self.listenPort}</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <reconnectionIntervalS>2</reconnectionIntervalS>
        <startBrowser>false</startBrowser>
        <urAccepted>-1</urAccepted>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <crashReportingEnabled>false</crashReportingEnabled>
        <setLowPriority>false</setLowPriority>
    </options>
</configuration>
`;
}

export class SyncthingPair {
  private readonly devices: Device[] = [];

  constructor(private readonly root: string) {}

  /** The shared folder on the first and on the second device. */
  get folders(): [string, string] {
    return [this.devices[0]!.folder, this.devices[1]!.folder];
  }

  get version(): Promise<string> {
    return promisify(execFile)(BIN, ['--version']).then((r) => r.stdout.trim().split(' ').slice(0, 2).join(' '));
  }

  async start(): Promise<void> {
    for (const name of ['st-a', 'st-b']) {
      const home = path.join(this.root, name, 'home');
      const folder = path.join(this.root, name, 'folder');
      await fs.mkdir(path.join(folder, '.stfolder'), { recursive: true });
      const { stdout, stderr } = await promisify(execFile)(BIN, ['generate', `--home=${home}`, '--no-default-folder']);
      const id = /Device ID:\s*(\S+)/.exec(`${stdout}\n${stderr}`)?.[1];
      if (!id) throw new Error(`syncthing generate printed no device id: ${stdout} ${stderr}`);
      this.devices.push({ name, home, folder, id, apiKey: randomBytes(16).toString('hex'), guiPort: await freePort(), listenPort: await freePort(), output: '' });
    }
    const [a, b] = this.devices as [Device, Device];
    await fs.writeFile(path.join(a.home, 'config.xml'), configOf(a, b));
    await fs.writeFile(path.join(b.home, 'config.xml'), configOf(b, a));
    for (const d of this.devices) {
      d.proc = spawn(BIN, ['serve', `--home=${d.home}`, '--no-browser', '--no-restart', '--no-upgrade', '--no-default-folder'], {
        env: { ...process.env, STNOUPGRADE: '1', STNORESTART: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const keep = (chunk: Buffer) => (d.output = (d.output + chunk.toString()).slice(-20_000));
      d.proc.stdout!.on('data', keep);
      d.proc.stderr!.on('data', keep);
    }
    await this.until(async () => (await Promise.all(this.devices.map((d) => this.rest(d, '/rest/system/ping').then(() => true, () => false)))).every(Boolean), 30_000, 'REST');
    await this.until(async () => {
      const c = (await this.rest(a, '/rest/system/connections')) as { connections: Record<string, { connected: boolean }> };
      return c.connections[b.id]?.connected === true;
    }, 60_000, 'the two devices connected');
  }

  /** Both devices' folder scanned and in sync with nothing in flight. */
  async idle(timeoutMs = 60_000): Promise<void> {
    await this.until(async () => {
      for (const d of this.devices) {
        const s = (await this.rest(d, `/rest/db/status?folder=${FOLDER_ID}`)) as { state: string; needTotalItems: number };
        if (s.state !== 'idle' || s.needTotalItems > 0) return false;
      }
      return true;
    }, timeoutMs, 'both folders idle');
  }

  private async rest(d: Device, route: string): Promise<unknown> {
    const res = await fetch(`http://127.0.0.1:${d.guiPort}${route}`, { headers: { 'X-API-Key': d.apiKey } });
    if (!res.ok) throw new Error(`${route}: HTTP ${res.status}`);
    return res.json();
  }

  private async until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check().catch(() => false))) {
      if (Date.now() > deadline) throw new Error(`syncthing: no ${what} within ${timeoutMs} ms: ${this.devices.map((d) => d.output.slice(-1500)).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops both processes (SIGTERM, then SIGKILL after 10 s); the homes and folders are the caller's to remove. */
  async stop(): Promise<void> {
    await Promise.all(
      this.devices.map(async (d) => {
        const proc = d.proc;
        if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
        const exited = new Promise<void>((r) => proc.once('exit', () => r()));
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
