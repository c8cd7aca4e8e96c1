// Reads the parts of a zip archive (an .xlsx workbook) by its central directory: any part can be read first,
// each as a stream, so a workbook's shared strings are read before its sheet whatever order they are stored in
// (Excel and LibreOffice store them after the sheets, and a reader going front to back must spool the sheet).
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { pipeline, Readable } from 'node:stream';
import { createInflateRaw } from 'node:zlib';

/** One stored part: where its compressed bytes are and how they are compressed. */
export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  flags: number;
  localHeaderOffset: number;
}

/** Why an archive cannot be read; the caller turns it into its own error. */
export class ZipFormatError extends Error {
  override name = 'ZipFormatError';
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buf.subarray(0, done);
}

function u64(buf: Buffer, at: number): number {
  const n = buf.readBigUInt64LE(at);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new ZipFormatError('a zip64 size or offset is out of range');
  return Number(n);
}

export class ZipFile {
  private constructor(
    private readonly path: string,
    private readonly handle: FileHandle,
    /** By name, lower-cased with `/` separators (part names of a package are case-insensitive). */
    private readonly entries: Map<string, ZipEntry>,
  ) {}

  /** Which file this is, as it is now: path, size, modification time and inode (a file changed since is another). */
  readonly identity: string = '';
  /** The archive's size in bytes: no part's compressed bytes can be more, whatever its directory claims. */
  readonly size: number = 0;

  static async open(path: string): Promise<ZipFile> {
    const handle = await open(path, 'r');
    try {
      const zip = new ZipFile(path, handle, await readDirectory(handle));
      const st = await handle.stat();
      (zip as { identity: string }).identity = [path, st.size, st.mtimeMs, st.ino, st.dev].join('\0');
      (zip as { size: number }).size = st.size;
      return zip;
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  entry(name: string): ZipEntry | undefined {
    return this.entries.get(name.toLowerCase());
  }

  /** A part's bytes, inflated, as a stream read only as fast as it is consumed. */
  async stream(entry: ZipEntry): Promise<Readable> {
    if (entry.flags & 1) throw new ZipFormatError(`${entry.name} is encrypted`);
    if (entry.method !== 0 && entry.method !== 8)
      throw new ZipFormatError(
        `${entry.name} is compressed with method ${entry.method} (only stored and deflated parts are read)`,
      );
    const local = await readAt(this.handle, entry.localHeaderOffset, 30);
    if (local.length < 30 || local.readUInt32LE(0) !== LOCAL)
      throw new ZipFormatError(`${entry.name}: no local header where the directory says`);
    const start = entry.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
    if (entry.compressedSize === 0) return Readable.from([]);
    const raw = createReadStream(this.path, { start, end: start + entry.compressedSize - 1, highWaterMark: 64 * 1024 });
    if (entry.method === 0) return raw;
    // pipeline: an error on either side (a cut file, corrupt data) destroys both and reaches the reader of the inflated
    // side.
    return pipeline(raw, createInflateRaw({ chunkSize: 64 * 1024 }), () => {});
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

async function readDirectory(handle: FileHandle): Promise<Map<string, ZipEntry>> {
  const { size } = await handle.stat();
  // The end-of-central-directory record is the last 22 bytes, followed by a comment of up to 65,535.
  const tailLength = Math.min(size, 22 + 0xffff);
  const tail = await readAt(handle, size - tailLength, tailLength);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0)
    throw new ZipFormatError('the zip archive has no central directory (the file is cut short or not a zip archive)');
  let count = tail.readUInt16LE(at + 10);
  let dirSize = tail.readUInt32LE(at + 12);
  let dirOffset = tail.readUInt32LE(at + 16);
  if (count === 0xffff || dirSize === 0xffffffff || dirOffset === 0xffffffff) {
    const locatorAt = at - 20;
    if (locatorAt < 0 || tail.readUInt32LE(locatorAt) !== ZIP64_LOCATOR)
      throw new ZipFormatError('a zip64 archive without its locator');
    const record = await readAt(handle, u64(tail, locatorAt + 8), 56);
    if (record.length < 56 || record.readUInt32LE(0) !== ZIP64_EOCD)
      throw new ZipFormatError('a zip64 archive without its directory record');
    count = u64(record, 32);
    dirSize = u64(record, 40);
    dirOffset = u64(record, 48);
  }
  if (dirOffset + dirSize > size)
    throw new ZipFormatError('the zip archive is cut short (its directory is past the end of the file)');
  const dir = await readAt(handle, dirOffset, dirSize);
  const entries = new Map<string, ZipEntry>();
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > dir.length || dir.readUInt32LE(p) !== CENTRAL)
      throw new ZipFormatError('the zip directory is damaged');
    const flags = dir.readUInt16LE(p + 8);
    const method = dir.readUInt16LE(p + 10);
    let compressedSize = dir.readUInt32LE(p + 20);
    let uncompressedSize = dir.readUInt32LE(p + 24);
    const nameLength = dir.readUInt16LE(p + 28);
    const extraLength = dir.readUInt16LE(p + 30);
    const commentLength = dir.readUInt16LE(p + 32);
    let localHeaderOffset = dir.readUInt32LE(p + 42);
    // Part names are ASCII in practice; bit 11 says UTF-8, else the name is CP437 (read as latin1: ASCII is the same).
    const name = dir
      .toString(flags & 0x800 ? 'utf8' : 'latin1', p + 46, p + 46 + nameLength)
      .replace(/\\/g, '/')
      .replace(/^\//, '');
    let e = p + 46 + nameLength;
    const extraEnd = e + extraLength;
    while (e + 4 <= extraEnd) {
      const id = dir.readUInt16LE(e);
      const len = dir.readUInt16LE(e + 2);
      if (id === 0x0001) {
        // The zip64 fields, in this order, present only for those the header marks 0xffffffff.
        let z = e + 4;
        if (uncompressedSize === 0xffffffff) ((uncompressedSize = u64(dir, z)), (z += 8));
        if (compressedSize === 0xffffffff) ((compressedSize = u64(dir, z)), (z += 8));
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = u64(dir, z);
      }
      e += 4 + len;
    }
    // Part names are equal up to ASCII case (ECMA-376 Part 2, §6.2.2.3), so a package may not hold two that differ
    // only in case (or two of one name): which of them a reader takes is its own choice (dnc's map by lower-cased name
    // took the last), so dnc could scrub numbers that no spreadsheet shows.
    const twin = entries.get(name.toLowerCase());
    if (twin)
      throw new ZipFormatError(
        `it holds two parts named '${twin.name}' and '${name}' (part names may not differ only in case)`,
      );
    entries.set(name.toLowerCase(), { name, method, compressedSize, uncompressedSize, flags, localHeaderOffset });
    p = extraEnd + commentLength;
  }
  return entries;
}
