import type { Matched } from './match';

interface LiveNode {
  parentId: string;
  /** The name on disk (may be NFD), and its NFC form. */
  disk: string;
  name: string;
  type: 'file' | 'folder';
}

/** The local tree by id during a pass, kept current as the pass renames, creates and deletes. */
export class LiveTree {
  readonly nodes = new Map<string, LiveNode>();
  private readonly byName = new Map<string, string>();
  private readonly byFold = new Map<string, string>();

  constructor(matched: Matched) {
    for (const n of matched.local.values()) {
      const disk = n.entry.disk.slice(n.entry.disk.lastIndexOf('/') + 1);
      this.set(n.id, n.parentId, n.name, n.entry.type, disk);
    }
  }

  has(id: string): boolean {
    return id === '' || this.nodes.has(id);
  }

  private chain(id: string, key: 'disk' | 'name'): string | undefined {
    if (id === '') return '';
    const parts: string[] = [];
    for (let cur: string = id, guard = 0; cur !== '' && guard < 4096; guard++) {
      const n = this.nodes.get(cur);
      if (!n) return undefined;
      parts.push(n[key]);
      cur = n.parentId;
    }
    return parts.reverse().join('/');
  }

  disk(id: string): string | undefined {
    return this.chain(id, 'disk');
  }

  path(id: string): string | undefined {
    return this.chain(id, 'name');
  }

  /** The id at a path (NFC) among a parent's children. */
  childNamed(parentId: string, name: string): string | undefined {
    return this.byName.get(`${parentId}/${name}`);
  }

  /** A sibling whose name equals this one ignoring case (what a case-insensitive file system sees). */
  childFolded(parentId: string, name: string): string | undefined {
    return this.byFold.get(`${parentId}/${name.toLowerCase()}`);
  }

  set(id: string, parentId: string, name: string, type: 'file' | 'folder', disk = name): void {
    this.remove(id);
    this.nodes.set(id, { parentId, name, disk, type });
    this.byName.set(`${parentId}/${name}`, id);
    this.byFold.set(`${parentId}/${name.toLowerCase()}`, id);
  }

  /** Gives a node another id (a new local item linked to the server's one), children included. */
  rekey(from: string, to: string): void {
    const n = this.nodes.get(from);
    if (!n) return;
    this.remove(from);
    this.set(to, n.parentId, n.name, n.type, n.disk);
    if (n.type !== 'folder') return;
    for (const [cid, c] of [...this.nodes]) if (c.parentId === from) this.set(cid, to, c.name, c.type, c.disk);
  }

  remove(id: string): void {
    const n = this.nodes.get(id);
    if (!n) return;
    this.nodes.delete(id);
    if (this.byName.get(`${n.parentId}/${n.name}`) === id) this.byName.delete(`${n.parentId}/${n.name}`);
    if (this.byFold.get(`${n.parentId}/${n.name.toLowerCase()}`) === id) this.byFold.delete(`${n.parentId}/${n.name.toLowerCase()}`);
  }

  get(id: string): LiveNode | undefined {
    return this.nodes.get(id);
  }
}
