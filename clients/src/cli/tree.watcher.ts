import { watch, promises as fs, type FSWatcher } from 'node:fs';
import { join, sep } from 'node:path';
import { STATE_DIR } from './journal';

/**
 * Watches DIR for hints of change: each event names a path that may have changed, nothing more (the
 * pass that follows reads the disk itself, and the periodic full scan finds what no event named).
 *
 * macOS and Windows watch a tree natively. On Linux, Node's recursive watch puts a watch and a stat
 * on every file, and chokidar lists and stats a whole folder again at most once a second while its
 * files change; here each folder gets one inotify watch, an event costs no stat, and only a name
 * not seen before as a folder is looked at once, to watch it if it is one.
 */
export class TreeWatcher {
  private readonly folders = new Map<string, FSWatcher>();
  private closed = false;

  constructor(
    private readonly root: string,
    /** A path relative to the root ('/'-separated) that may have changed. */
    private readonly onHint: (path: string) => void,
    /** The watch cannot go on (no inotify watches left, too many handles): the caller scans instead. */
    private readonly onError: (err: Error) => void,
    /**
     * An event the caller expects, of a file or folder it placed itself: a file's is dropped before it
     * costs anything; a folder is watched, and hinted only if something is in it by then.
     */
    private readonly expected: (path: string) => 'file' | 'folder' | undefined = () => undefined,
  ) {}

  async start(): Promise<void> {
    if (process.platform === 'darwin' || process.platform === 'win32') {
      const w = watch(this.root, { recursive: true }, (_event, name) => {
        const path = name ? String(name).split(sep).join('/') : '';
        if (path && !this.expected(path)) this.hint(path);
      });
      w.on('error', (err) => this.fail(err));
      this.folders.set('', w);
      return;
    }
    await this.watchTree('');
  }

  close(): void {
    this.closed = true;
    for (const w of this.folders.values()) w.close();
    this.folders.clear();
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.close();
    this.onError(err);
  }

  private hint(path: string): void {
    if (this.closed || path === STATE_DIR || path.startsWith(`${STATE_DIR}/`)) return;
    this.onHint(path);
  }

  /**
   * Watches a folder and the folders below it; one that is gone meanwhile is left out. Answers
   * whether the folder may hold something: false only for one listed empty.
   */
  private async watchTree(rel: string): Promise<boolean> {
    if (this.closed || this.folders.has(rel) || rel === STATE_DIR) return true;
    const full = rel === '' ? this.root : join(this.root, rel);
    let w: FSWatcher;
    try {
      w = watch(full, { persistent: true }, (event, name) => {
        if (name) this.event(rel, event, String(name));
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES' || code === 'EPERM') return true;
      this.fail(err as Error);
      return true;
    }
    w.on('error', (err: NodeJS.ErrnoException) => {
      // The folder itself went away: its parent's event says so; only its watch ends.
      if (err.code === 'ENOENT' || err.code === 'EPERM') this.unwatch(rel);
      else this.fail(err);
    });
    this.folders.set(rel, w);
    let entries;
    try {
      entries = await fs.readdir(full, { withFileTypes: true });
    } catch {
      return true;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const sub = rel === '' ? e.name : `${rel}/${e.name}`;
      // A folder made while this one was listed: the pass looks at it.
      if (rel !== '' || e.name !== STATE_DIR) await this.watchTree(sub);
    }
    return entries.length > 0;
  }

  private unwatch(rel: string): void {
    for (const [path, w] of this.folders) {
      if (path === rel || (rel !== '' && path.startsWith(`${rel}/`))) {
        w.close();
        this.folders.delete(path);
      }
    }
  }

  private event(rel: string, event: string, name: string): void {
    const path = rel === '' ? name : `${rel}/${name}`;
    if (this.closed || path === STATE_DIR || path.startsWith(`${STATE_DIR}/`)) return;
    const mine = this.expected(path);
    if (mine === 'file') return;
    if (!mine) this.hint(path);
    // A name coming or going may be a folder to watch or to stop watching; a write inside a file is not.
    if (event !== 'rename') return;
    void fs.lstat(join(this.root, path)).then(
      (st) => {
        // A folder made anew under a name watched before holds a new inode: it is watched afresh.
        this.unwatch(path);
        // What was written in it before its watch began has no event of its own: the pass looks at it.
        if (st.isDirectory()) void this.watchTree(path).then((filled) => (!mine || filled) && this.hint(path));
      },
      () => this.unwatch(path),
    );
  }

  /** How many folders are watched (for the tests). */
  get size(): number {
    return this.folders.size;
  }
}
