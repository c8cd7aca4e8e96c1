// StrictUtf8 passes a file's bytes on unchanged, chunk by chunk, and refuses one that is not UTF-8 or holds a NUL,
// naming the line: judged here against a second implementation (the whole file decoded at once, lines counted by a
// plain loop), over generated files cut into generated chunks. The seed is printed on failure.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineCounter, StrictUtf8 } from '../../src/tables/decode.js';

/** Bytes a call list is made of, and those that break one: CR, LF, quotes, multi-byte characters, bad bytes, NUL. */
const piece = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'Zoë', '日本', '😀', ',', '"', '\r', '\n', '\r\n', '+12025550100') },
  { weight: 1, arbitrary: fc.constantFrom('\uFEFF', '\0') },
  {
    weight: 1,
    arbitrary: fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0x80], [0xed, 0xa0, 0x80]),
  },
);

function bytesOf(pieces: ReadonlyArray<string | readonly number[]>): Buffer {
  return Buffer.concat(
    pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p as number[]))),
  );
}

/** The oracle's line of a byte offset: LF, CRLF and a lone CR each end a line. */
function lineAt(bytes: Buffer, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) {
    if (bytes[i] === 0x0a && bytes[i - 1] !== 0x0d) line++;
    else if (bytes[i] === 0x0d) line++;
  }
  return line;
}

function chunksOf(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    if (c > from) out.push(bytes.subarray(from, c));
    from = Math.max(from, c);
  }
  return out;
}

async function run(chunks: Buffer[]): Promise<{ out: Buffer; error: Error | null }> {
  const got: Buffer[] = [];
  try {
    await pipeline(
      Readable.from(chunks, { objectMode: false }),
      new StrictUtf8('list.csv', undefined),
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          got.push(chunk);
          cb();
        },
      }),
    );
    return { out: Buffer.concat(got), error: null };
  } catch (err) {
    return { out: Buffer.concat(got), error: err as Error };
  }
}

const options = {
  numRuns: 400,
  ...(process.env.DNC_PROPERTY_SEED ? { seed: Number(process.env.DNC_PROPERTY_SEED) } : {}),
};

describe('StrictUtf8', () => {
  it('passes a UTF-8 file on byte for byte, and refuses any other at the line the oracle finds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(piece, { maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (pieces, cuts) => {
          const bytes = bytesOf(pieces);
          const { out, error } = await run(chunksOf(bytes, cuts));
          const nul = bytes.indexOf(0);
          let text: string | null = null;
          try {
            text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
          } catch {
            text = null;
          }
          if (nul < 0 && text !== null) {
            expect(error).toBeNull();
            expect(out.equals(bytes)).toBe(true);
            return;
          }
          expect(error).not.toBeNull();
          // What was passed on before the refusal is a prefix of the file.
          expect(bytes.subarray(0, out.length).equals(out)).toBe(true);
          const message = error!.message;
          if (/NUL byte/.test(message)) {
            expect(nul).toBeGreaterThanOrEqual(0);
            expect(message).toContain(`list.csv: line ${lineAt(bytes, nul)}:`);
          } else {
            expect(message).toMatch(/not valid UTF-8|ends in the middle of a UTF-8 character/);
            // The oracle: a streaming decoder fed a byte at a time fails at the first byte no UTF-8 text can have
            // there, or at the end when the file ends inside a character.
            const line = Number(/line (\d+):/.exec(message)![1]);
            const decoder = new TextDecoder('utf-8', { fatal: true });
            let bad = bytes.length;
            for (let i = 0; i < bytes.length; i++) {
              try {
                decoder.decode(bytes.subarray(i, i + 1), { stream: true });
              } catch {
                bad = i;
                break;
              }
            }
            expect(line).toBe(lineAt(bytes, bad));
          }
        },
      ),
      options,
    );
  }, 120_000);

  it('says a file ends inside a character only when no byte before its end is bad (a final 0xF6 is bad)', async () => {
    // Endings of every kind: characters the end cuts, and bytes no character begins with (a Windows-1252 "ö", 0xC0,
    // an overlong or surrogate start), which a strict decoder refuses where they are, not at the end.
    const body = fc.array(fc.constantFrom('a', 'Zoë', '日本', '😀', ',', '\n', '\r\n'), { maxLength: 30 });
    const ending = fc.constantFrom(
      ...[[0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xf4, 0x8f], [0xed, 0x9f], [0xf6], [0xff], [0xc0], [0xc1]],
      ...[[0xf5], [0xe0, 0x80], [0xed, 0xa0], [0xf0, 0x80], [0xf4, 0x90], [0xf0, 0x9f, 0x41]],
    );
    await fc.assert(
      fc.asyncProperty(body, ending, fc.array(fc.nat(), { maxLength: 4 }), async (parts, end, cuts) => {
        const bytes = Buffer.concat([Buffer.from(parts.join(''), 'utf8'), Buffer.from(end)]);
        const { error } = await run(chunksOf(bytes, cuts));
        // The oracle: a strict decoder fed a byte at a time, which fails at a bad byte, or only at its flush.
        const decoder = new TextDecoder('utf-8', { fatal: true });
        let badBeforeEnd = false;
        for (let i = 0; i < bytes.length && !badBeforeEnd; i++) {
          try {
            decoder.decode(bytes.subarray(i, i + 1), { stream: true });
          } catch {
            badBeforeEnd = true;
          }
        }
        expect(error?.message).toMatch(badBeforeEnd ? /not valid UTF-8/ : /ends in the middle of a UTF-8 character/);
      }),
      options,
    );
  });

  it("counts a chunk's lines as the byte-by-byte count does, a CRLF cut between chunks included", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', '\r', '\n', '\r\n', 'é'), { maxLength: 80 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (parts, cuts) => {
          const bytes = Buffer.from(parts.join(''), 'utf8');
          const fast = new LineCounter();
          for (const c of chunksOf(bytes, cuts)) fast.advanceBytes(c);
          const slow = new LineCounter();
          slow.advance(bytes);
          expect(fast.line).toBe(slow.line);
          expect(fast.line).toBe(lineAt(bytes, bytes.length));
        },
      ),
      options,
    );
  });
});
