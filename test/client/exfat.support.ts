import { execFile } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './cli.support';

const run = promisify(execFile);

/** The tools `.ci/run` installs (Debian packages exfatprogs and exfat-fuse), and the loop device tool. */
const TOOLS = { mkfs: '/usr/sbin/mkfs.exfat', mount: '/usr/sbin/mount.exfat-fuse', losetup: '/usr/sbin/losetup' };

/** A real case-insensitive file system: an exFAT image on a loop device, mounted through FUSE. */
export interface ExfatMount {
  /** The mount point. */
  root: string;
  /** Unmounts and mounts it again: what exFAT holds stays, FUSE gives every node a new inode number. */
  remount(): Promise<void>;
  close(): Promise<void>;
}

const failure = (what: string, err: unknown) => {
  const e = err as { stderr?: string; message?: string };
  return new Error(`${what}: ${(e.stderr || e.message || String(err)).trim()}`);
};

/**
 * Mounts a fresh exFAT file system. It fails with what is missing or what the kernel answered: the
 * tests that need it say so rather than pass without it.
 */
export async function mountExfat(sizeMiB = 64): Promise<ExfatMount> {
  const missing = Object.values(TOOLS).filter((t) => !existsSync(t));
  if (missing.length > 0) throw new Error(`cannot mount exFAT: ${missing.join(', ')} not installed (apt-get install exfatprogs exfat-fuse, as .ci/run does)`);
  if (!existsSync('/dev/fuse')) throw new Error('cannot mount exFAT: /dev/fuse does not exist');
  if (process.getuid?.() !== 0) throw new Error('cannot mount exFAT: a loop device and a FUSE block mount need root');
  const work = await tempDir('exfat');
  const image = path.join(work, 'image');
  const root = path.join(work, 'mnt');
  await fs.mkdir(root);
  await fs.writeFile(image, '');
  await fs.truncate(image, sizeMiB * 1024 * 1024);
  let device: string;
  try {
    // mount.exfat-fuse run by root mounts a block device (fuseblk): the image goes on a loop device.
    device = (await run(TOOLS.losetup, ['--find', '--show', image])).stdout.trim();
  } catch (err) {
    throw failure('cannot attach the exFAT image to a loop device', err);
  }
  const mount = async () => {
    try {
      await run(TOOLS.mount, [device, root]);
    } catch (err) {
      throw failure(`mount.exfat-fuse ${device} refused`, err);
    }
  };
  const unmount = () => run('umount', [root]);
  const detach = () => run(TOOLS.losetup, ['--detach', device]).catch(() => undefined);
  try {
    await run(TOOLS.mkfs, [device]);
  } catch (err) {
    await detach();
    throw failure('mkfs.exfat failed', err);
  }
  try {
    await mount();
  } catch (err) {
    await detach();
    throw err;
  }
  return {
    root,
    async remount() {
      await unmount();
      await mount();
    },
    async close() {
      await unmount().catch(() => undefined);
      await detach();
      await fs.rm(work, { recursive: true, force: true });
    },
  };
}
