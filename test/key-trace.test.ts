// The trace of a key kept in a batch's journal: it finds the key in a text, in the ways echoes write it, and holds no
// part of it.
import { describe, expect, it } from 'vitest';
import { keysIn, keyTraceOf, traces } from '../src/key-trace.js';

const KEY = 'S3cr3t+K3y/Zq=9_h0st1le_4f1d0c9e';

describe('keyTraceOf and keysIn', () => {
  it('hold neither the key nor a part of it, and each trace its own salt', () => {
    const a = keyTraceOf(KEY)!;
    const b = keyTraceOf(KEY)!;
    const text = JSON.stringify(a);
    for (let i = 0; i + 6 <= KEY.length; i++) expect(text).not.toContain(KEY.slice(i, i + 6));
    expect(a.salt).not.toBe(b.salt);
    expect(a.exact[1]).not.toBe(b.exact[1]);
    expect([traces(a, KEY), traces(a, `${KEY}x`), traces(a, KEY.toUpperCase())]).toEqual([true, false, false]);
    expect(keyTraceOf('short')).toBeNull();
  });

  it('find the key as written, in another case, percent-encoded, escaped, reversed, spaced out, in base64 and hex', () => {
    const t = keyTraceOf(KEY)!;
    const forms = {
      raw: KEY,
      upper: KEY.toUpperCase(),
      percentTwice: encodeURIComponent(encodeURIComponent(KEY)),
      json: [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      html: [...KEY].map((c) => `&#${c.charCodeAt(0)};`).join(''),
      reversed: [...KEY].reverse().join(''),
      wrapped: KEY.replace(/(.{5})/g, '$1\r\n'),
      utf16: Buffer.from(KEY, 'utf16le').toString('latin1'),
      fullWidth: [...KEY].map((c) => String.fromCodePoint(c.charCodeAt(0) + 0xfee0)).join(''),
      base64At1: Buffer.from(`a${KEY}zz`).toString('base64'),
      base64url: Buffer.from(`ab${KEY}`).toString('base64url'),
      hex: Buffer.from(KEY).toString('hex'),
    };
    for (const [name, form] of Object.entries(forms)) {
      const found = keysIn(`{"dnc_list_source": "https://r.example/?k=${form}&x=1"}`, [t]);
      expect(new Set(found.map((k) => k.toLowerCase())), name).toEqual(new Set([KEY.toLowerCase()]));
    }
  });

  it('find nothing in a text without the key, nor a key one character off', () => {
    const t = keyTraceOf(KEY)!;
    const near = `${KEY.slice(0, -1)}f`;
    expect(keysIn(`text ${near} ${encodeURIComponent(near)} ${'abc123+/='.repeat(500)}`, [t])).toEqual([]);
    expect(keysIn('', [t])).toEqual([]);
  });
});
