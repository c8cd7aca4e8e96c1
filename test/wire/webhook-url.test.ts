// The description's webhook_url rule (4.1, 6), shared by the client (checked before spending) and the sandbox.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  MIN_SECRET_LENGTH,
  privateHostKind,
  webhookUrlCarries,
  webhookUrlProblem,
} from '../../src/wire/webhook-url.js';

describe('webhook_url: public hosts only', () => {
  it.each([
    ['hooks.example.com', null],
    ['8.8.8.8', null],
    ['[2606:4700::1111]', null],
    ['[64:ff9b::808:808]', null], // NAT64 of a public IPv4 address
    ['127.0.0.1', 'loopback'],
    ['[::1]', 'loopback'],
    ['localhost', 'loopback'],
    ['[::ffff:127.0.0.1]', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'], // the same, as URL parsing writes it
    ['[0:0:0:0:0:ffff:7f00:0001]', 'loopback'],
    ['[64:ff9b::7f00:1]', 'loopback'],
    ['[::127.0.0.1]', 'loopback'],
    ['[::ffff:10.0.0.1]', 'private'],
    ['[::ffff:a9fe:a9fe]', 'link-local'], // 169.254.169.254, the cloud metadata address
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['[fd00::1]', 'private'],
    ['[fec0::1]', 'private'],
    ['169.254.169.254', 'link-local'],
    ['[fe80::1]', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['[::]', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['[ff02::1]', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['[::808:808]', 'reserved'], // IPv4-compatible (deprecated), even of a public address
    ['192.0.2.1', 'documentation'],
    ['203.0.113.7', 'documentation'],
    ['[2001:db8::1]', 'documentation'],
  ])('%s → %s', (host, kind) => {
    const url = `https://${host}/hook`;
    expect(privateHostKind(new URL(url).hostname.replace(/^\[|\]$/g, ''))).toBe(kind);
    const problem = webhookUrlProblem(url);
    if (kind === null) expect(problem).toBeNull();
    else
      expect(problem).toBe(
        `its host ${new URL(url).hostname} is a ${kind} address; the service pushes only to public hosts`,
      );
  });

  it.each([
    'printer.local',
    'hooks.internal',
    'a.test',
    'x.invalid',
    'router.home.arpa',
    'nas.lan',
    'erp.corp',
    'intranet',
    'x',
  ])('a name no public DNS answers for (%s) is refused, and allowed with allowInsecure', (host) => {
    expect(webhookUrlProblem(`https://${host}/hook`)).toBe(
      `its host ${host} is not a public name (a reserved suffix or a single label); the service pushes only to public hosts`,
    );
    expect(webhookUrlProblem(`https://${host}/hook`, { allowInsecure: true })).toBeNull();
  });

  it('https:///x has no host of its own: read as the single label "x", refused', () => {
    expect(webhookUrlProblem('https:///x')).toContain('its host x is not a public name');
  });

  it('loopback only, and http, with allowInsecure (dnc sandbox --allow-insecure-webhooks)', () => {
    expect(webhookUrlProblem('http://[::ffff:7f00:1]:8080/hook', { allowInsecure: true })).toBeNull();
    expect(webhookUrlProblem('http://[::ffff:10.0.0.1]:8080/hook', { allowInsecure: true })).toContain(
      'private address',
    );
  });
});

describe('webhook_url: the API key in any form is found (a property: a failure prints its seed)', () => {
  const property = {
    numRuns: 400,
    verbose: 1,
    ...(process.env.DNC_PROPERTY_SEED ? { seed: Number(process.env.DNC_PROPERTY_SEED) } : {}),
  } as const;
  const keyChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.'.split(''));
  const key = fc.string({ unit: keyChar, minLength: MIN_SECRET_LENGTH, maxLength: 48 });
  // Text around the key inside an encoded value (other fields of a token, say): any bytes, any length.
  const around = fc.string({ maxLength: 12 });
  const percentAll = (s: string) =>
    [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  const encodings: Record<string, (before: string, k: string, after: string) => string> = {
    raw: (_b, k) => k,
    upper: (_b, k) => k.toUpperCase(),
    lower: (_b, k) => k.toLowerCase(),
    percent: (_b, k) => percentAll(k),
    'percent, upper case': (_b, k) => percentAll(k).toUpperCase(),
    'percent twice': (_b, k) => percentAll(k).replaceAll('%', '%25'),
    hex: (b, k, a) => Buffer.from(b + k + a).toString('hex'),
    HEX: (b, k, a) =>
      Buffer.from(b + k + a)
        .toString('hex')
        .toUpperCase(),
    'hex of the upper-case key': (b, k, a) => Buffer.from(b + k.toUpperCase() + a).toString('hex'),
    base64: (b, k, a) => encodeURIComponent(Buffer.from(b + k + a).toString('base64')),
    'base64 unescaped': (b, k, a) => Buffer.from(b + k + a).toString('base64'),
    base64url: (b, k, a) => Buffer.from(b + k + a).toString('base64url'),
    'base64 of the lower-case key': (b, k, a) => Buffer.from(b + k.toLowerCase() + a).toString('base64url'),
    'base64url, percent-encoded': (b, k, a) => percentAll(Buffer.from(b + k + a).toString('base64url')),
  };
  const places: Record<string, (value: string) => string> = {
    query: (v) => `https://hooks.example.com/in?token=${v}&x=1`,
    path: (v) => `https://hooks.example.com/in/${v}/push`,
    fragment: (v) => `https://hooks.example.com/in#${v}`,
  };

  it('is refused in every encoding, at every alignment, in the query, path or fragment', () => {
    fc.assert(
      fc.property(
        key,
        around,
        around,
        fc.constantFrom(...Object.keys(encodings)),
        fc.constantFrom(...Object.keys(places)),
        (k, before, after, encoding, place) => {
          const url = places[place]!(encodings[encoding]!(before, k, after));
          expect(webhookUrlCarries(url, k), `${encoding} in the ${place}: ${url}`).toBe(true);
        },
      ),
      property,
    );
  });

  it('every alignment of base64 is covered: the key after 0, 1 and 2 bytes', () => {
    const k = 'sbx_live_7Hq2mZ';
    for (const before of ['', 'a', 'ab', 'abc', 'user:', 'user:x']) {
      for (const encode of ['base64', 'base64url'] as const) {
        const url = `https://hooks.example.com/in?t=${encodeURIComponent(Buffer.from(`${before}${k}`).toString(encode))}`;
        expect(webhookUrlCarries(url, k), `${encode} after ${before.length} byte(s)`).toBe(true);
      }
    }
  });

  it('a URL without the key is accepted, and keys shorter than 8 characters are not looked for', () => {
    fc.assert(
      fc.property(key, fc.webUrl({ withQueryParameters: true, withFragments: true }), (k, url) => {
        fc.pre(!url.toLowerCase().includes(k.toLowerCase()));
        expect(webhookUrlCarries(url, k), url).toBe(false);
      }),
      property,
    );
    expect(webhookUrlCarries('https://hooks.example.com/in?t=abc', 'abc')).toBe(false);
    expect(webhookUrlCarries('https://hooks.example.com/in/sbx_live_7Hq2mZ', 'sbx_live_7Hq2mZ')).toBe(true);
  });
});
