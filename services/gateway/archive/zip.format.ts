/*
 * The records of a ZIP archive of stored (uncompressed) entries written front to back, never sought
 * back into (APPNOTE 6.3): each entry's local header, its bytes, a data descriptor with its CRC-32,
 * then the central directory and the end records. Names are UTF-8 (general-purpose bit 11). An
 * entry whose CRC-32 is known before its bytes (recorded when the content was written) has it and
 * its sizes in the local header and no descriptor; the others have them after the bytes (bit 3).
 * ZIP64 records appear where a size, an offset or the count exceeds the classic fields, or
 * everywhere when asked for.
 */

const LOCAL_HEADER = 0x04034b50;
const DATA_DESCRIPTOR = 0x08074b50;
const CENTRAL_HEADER = 0x02014b50;
const ZIP64_END = 0x06064b50;
const ZIP64_LOCATOR = 0x07064b50;
const END = 0x06054b50;

/** The name is UTF-8 (bit 11). */
const UTF8 = 1 << 11;
/** Sizes and CRC follow the data (bit 3). */
const FOLLOW = 1 << 3;
/** Made on Unix (3), by specification 6.3: external attributes are a Unix mode. */
const MADE_BY = (3 << 8) | 63;
const NEEDS = 20;
const NEEDS_ZIP64 = 45;
/** A regular file, rw-rw-r--. */
const FILE_ATTRIBUTES = (0o100664 << 16) >>> 0;
const MAX16 = 0xffff;
const MAX32 = 0xffffffff;
/** Central directory bytes kept per block: the directory grows by blocks, never by copying. */
const BLOCK = 64 * 1024;

const EMPTY = Buffer.alloc(0);

const minDos = new Date(1980, 0, 1);
const maxDos = new Date(2107, 11, 31, 23, 59, 58);

/** MS-DOS date and time, in the gateway's time zone as unzippers read them; clamped to the range they hold. */
function dosDateTime(at: Date): { date: number; time: number } {
  const d = at < minDos ? minDos : at > maxDos ? maxDos : at;
  return {
    date: (d.getDate() & 0x1f) | (((d.getMonth() + 1) & 0xf) << 5) | (((d.getFullYear() - 1980) & 0x7f) << 9),
    time: Math.floor(d.getSeconds() / 2) | ((d.getMinutes() & 0x3f) << 5) | ((d.getHours() & 0x1f) << 11),
  };
}

/** Seconds since 1970 in the 32 signed bits of the extended-timestamp field. */
const unixSeconds = (at: Date) => Math.min(0x7fffffff, Math.max(-0x80000000, Math.floor(at.getTime() / 1000)));

const writeU64 = (buf: Buffer, n: number, at: number) => {
  buf.writeUInt32LE(n % 0x100000000, at);
  buf.writeUInt32LE(Math.floor(n / 0x100000000), at + 4);
};

interface Open {
  name: Buffer;
  size: number;
  mtime: Date;
  /** `mtime` as MS-DOS date and time, for the central directory too. */
  dos: { date: number; time: number };
  offset: number;
  zip64: boolean;
  /** The CRC-32 given before the bytes (in the local header, no descriptor), or undefined. */
  crc: number | undefined;
}

export interface ZipOptions {
  /** ZIP64 records for every entry and the end, whatever the sizes (how readers are tested on them). */
  forceZip64?: boolean;
}

/**
 * Encodes the archive's records in order while the caller writes them and, between an entry's
 * header and its descriptor, exactly the entry's bytes. Holds only the central directory, about
 * 60 bytes plus the name per entry.
 */
export class ZipEncoder {
  private offset = 0;
  private count = 0;
  private open: Open | undefined;
  private readonly blocks: Buffer[] = [];
  private block = Buffer.allocUnsafe(BLOCK);
  private used = 0;
  private directorySize = 0;
  private readonly force: boolean;

  constructor(options: ZipOptions = {}) {
    this.force = options.forceZip64 === true;
  }

  /** The bytes an entry's header and descriptor take (so a caller can frame its bytes with them in one buffer). */
  frame(path: string, size: number, crc?: number | null): { head: number; tail: number } {
    const zip64 = this.force || size >= MAX32;
    const tail = crc != null ? 0 : zip64 ? 24 : 16;
    return { head: 30 + Buffer.byteLength(path, 'utf8') + (zip64 ? 20 : 0), tail };
  }

  /**
   * The local header of an entry of `size` bytes (in `into` when given, `frame().head` long); its
   * bytes come next, then `end`. With `crc`, the bytes' CRC-32, known before them, the header holds
   * it and the sizes and `end` adds no descriptor.
   */
  begin(path: string, size: number, mtime: Date, into?: Buffer, crc?: number | null): Buffer {
    if (this.open) throw new Error('the previous entry is not ended');
    const name = Buffer.from(path, 'utf8');
    if (name.length > MAX16) throw new Error('an entry name is longer than a ZIP holds');
    const zip64 = this.force || size >= MAX32;
    const dos = dosDateTime(mtime);
    const { date, time } = dos;
    const header = into ?? Buffer.allocUnsafe(30 + name.length + (zip64 ? 20 : 0));
    header.writeUInt32LE(LOCAL_HEADER, 0);
    header.writeUInt16LE(zip64 ? NEEDS_ZIP64 : NEEDS, 4);
    const known = crc != null ? crc >>> 0 : undefined;
    header.writeUInt16LE(known === undefined ? UTF8 | FOLLOW : UTF8, 6);
    header.writeUInt16LE(0, 8);
    header.writeUInt16LE(time, 10);
    header.writeUInt16LE(date, 12);
    // Unknown CRC: CRC and sizes are in the descriptor (0 here). A ZIP64 entry's sizes are in its extra field.
    const classic = known === undefined ? 0 : size;
    header.writeUInt32LE(known ?? 0, 14);
    header.writeUInt32LE(zip64 ? MAX32 : classic, 18);
    header.writeUInt32LE(zip64 ? MAX32 : classic, 22);
    header.writeUInt16LE(name.length, 26);
    header.writeUInt16LE(zip64 ? 20 : 0, 28);
    name.copy(header, 30);
    if (zip64) {
      const at = 30 + name.length;
      header.writeUInt16LE(0x0001, at);
      header.writeUInt16LE(16, at + 2);
      writeU64(header, known === undefined ? 0 : size, at + 4);
      writeU64(header, known === undefined ? 0 : size, at + 12);
    }
    this.open = { name, size, mtime, dos, offset: this.offset, zip64, crc: known };
    this.offset += header.length + size;
    return header;
  }

  /**
   * The data descriptor of the entry begun last (in `into` when given), once its bytes were
   * written; `crc` is their CRC-32. Empty for an entry begun with its CRC (`crc` is then that one).
   */
  end(crc: number, into?: Buffer): Buffer {
    const entry = this.open;
    if (!entry) throw new Error('no entry is open');
    this.open = undefined;
    if (entry.crc !== undefined) {
      this.count++;
      this.record(entry, entry.crc);
      return EMPTY;
    }
    const descriptor = into ?? Buffer.allocUnsafe(entry.zip64 ? 24 : 16);
    descriptor.writeUInt32LE(DATA_DESCRIPTOR, 0);
    descriptor.writeUInt32LE(crc >>> 0, 4);
    if (entry.zip64) {
      writeU64(descriptor, entry.size, 8);
      writeU64(descriptor, entry.size, 16);
    } else {
      descriptor.writeUInt32LE(entry.size, 8);
      descriptor.writeUInt32LE(entry.size, 12);
    }
    this.offset += descriptor.length;
    this.count++;
    this.record(entry, crc >>> 0);
    return descriptor;
  }

  /** The central directory and the end records: the archive's last bytes. */
  finish(): Buffer[] {
    if (this.open) throw new Error('the last entry is not ended');
    const start = this.offset;
    const size = this.directorySize;
    const out = [...this.blocks, this.block.subarray(0, this.used)];
    const zip64 = this.force || this.count >= MAX16 || start >= MAX32 || size >= MAX32;
    if (zip64) {
      const tail = Buffer.alloc(56 + 20);
      tail.writeUInt32LE(ZIP64_END, 0);
      writeU64(tail, 44, 4);
      tail.writeUInt16LE(MADE_BY, 12);
      tail.writeUInt16LE(NEEDS_ZIP64, 14);
      writeU64(tail, this.count, 24);
      writeU64(tail, this.count, 32);
      writeU64(tail, size, 40);
      writeU64(tail, start, 48);
      tail.writeUInt32LE(ZIP64_LOCATOR, 56);
      writeU64(tail, start + size, 64);
      tail.writeUInt32LE(1, 72);
      out.push(tail);
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(END, 0);
    end.writeUInt16LE(zip64 ? MAX16 : this.count, 8);
    end.writeUInt16LE(zip64 ? MAX16 : this.count, 10);
    end.writeUInt32LE(zip64 ? MAX32 : size, 12);
    end.writeUInt32LE(zip64 ? MAX32 : start, 16);
    out.push(end);
    return out;
  }

  /** Appends the entry's central directory header: ZIP64 fields for what overflows, the modification time as Unix seconds. */
  private record(entry: Open, crc: number): void {
    const bigOffset = this.force || entry.offset >= MAX32;
    const extra64 = (entry.zip64 ? 16 : 0) + (bigOffset ? 8 : 0);
    const length = 46 + entry.name.length + 9 + (extra64 > 0 ? 4 + extra64 : 0);
    if (this.used + length > this.block.length) {
      this.blocks.push(this.block.subarray(0, this.used));
      this.block = Buffer.allocUnsafe(Math.max(BLOCK, length));
      this.used = 0;
    }
    const r = this.block.subarray(this.used, this.used + length);
    const { date, time } = entry.dos;
    r.writeUInt32LE(CENTRAL_HEADER, 0);
    r.writeUInt16LE(MADE_BY, 4);
    r.writeUInt16LE(entry.zip64 || bigOffset ? NEEDS_ZIP64 : NEEDS, 6);
    r.writeUInt16LE(entry.crc === undefined ? UTF8 | FOLLOW : UTF8, 8);
    r.writeUInt16LE(0, 10);
    r.writeUInt16LE(time, 12);
    r.writeUInt16LE(date, 14);
    r.writeUInt32LE(crc, 16);
    r.writeUInt32LE(entry.zip64 ? MAX32 : entry.size, 20);
    r.writeUInt32LE(entry.zip64 ? MAX32 : entry.size, 24);
    r.writeUInt16LE(entry.name.length, 28);
    r.writeUInt16LE(length - 46 - entry.name.length, 30);
    r.writeUInt16LE(0, 32);
    r.writeUInt16LE(0, 34);
    r.writeUInt16LE(0, 36);
    r.writeUInt32LE(FILE_ATTRIBUTES, 38);
    r.writeUInt32LE(bigOffset ? MAX32 : entry.offset, 42);
    entry.name.copy(r, 46);
    let at = 46 + entry.name.length;
    // Extended timestamp ("UT"): flags say mtime and atime as Info-ZIP writes them, only mtime follows.
    r.writeUInt16LE(0x5455, at);
    r.writeUInt16LE(5, at + 2);
    r.writeUInt8(3, at + 4);
    r.writeInt32LE(unixSeconds(entry.mtime), at + 5);
    at += 9;
    if (extra64 > 0) {
      // In the order the fields overflow: uncompressed size, compressed size, local header offset.
      r.writeUInt16LE(0x0001, at);
      r.writeUInt16LE(extra64, at + 2);
      at += 4;
      if (entry.zip64) {
        writeU64(r, entry.size, at);
        writeU64(r, entry.size, at + 8);
        at += 16;
      }
      if (bigOffset) writeU64(r, entry.offset, at);
    }
    this.used += length;
    this.directorySize += length;
  }
}
