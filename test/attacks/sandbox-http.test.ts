// The sandbox held to the letter of HTTP and of the description: 401 challenges, the Bearer scheme, webhook URLs, usage queries.
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { get, lookup } from '../sandbox/helpers.js';

let sb: Sandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const US = '+12025550122';

describe('authentication', () => {
  it('answers every 401 with WWW-Authenticate: Bearer (RFC 9110 §11.6.1)', async () => {
    sb = await startSandbox({ port: 0, seed: 3 });
    for (const [what, reply] of [
      ['no header', await get(sb, '/usage_stats', null)],
      ['an empty Bearer', await get(sb, '/v2/usage_stats', 'Bearer')],
      ['a lookup without a key', await lookup(sb, US, undefined, null)],
      ['a bad portal token', await get(sb, '/v2/usage_stats', `Bearer ${sb.portalToken({ expiresIn: -1 })}`)],
    ] as const) {
      expect(reply.status, what).toBe(401);
      expect(reply.headers['www-authenticate'], what).toBe('Bearer');
    }
    // A 403 (a key that is wrong, not missing) carries no challenge.
    const wrong = await get(sb, '/usage_stats', 'Bearer not-a-key');
    expect(wrong.status).toBe(403);
    expect(wrong.headers['www-authenticate']).toBeUndefined();
  });

  it('matches the Bearer scheme case-insensitively, and takes the key without it', async () => {
    sb = await startSandbox({ port: 0, seed: 3 });
    for (const auth of [`bearer ${sb.apiKey}`, `BEARER ${sb.apiKey}`, `Bearer    ${sb.apiKey}`, sb.apiKey]) {
      expect((await get(sb, '/usage_stats', auth)).status, auth.replace(sb.apiKey, 'KEY')).toBe(200);
      expect((await lookup(sb, US, undefined, auth)).status, auth.replace(sb.apiKey, 'KEY')).toBe(200);
    }
    // The request log keeps the form, never the key.
    const logged = sb.requests().map((r) => r.headers.authorization);
    expect(logged.every((a) => a === 'Bearer ***' || a === '***')).toBe(true);
  });

  it('accepts a portal JWT on /v2/usage_stats with or without the Bearer prefix, and nowhere else', async () => {
    sb = await startSandbox({ port: 0, seed: 3 });
    const token = sb.portalToken();
    for (const auth of [`Bearer ${token}`, `bearer ${token}`, token]) {
      const reply = await get(sb, '/v2/usage_stats', auth);
      expect(reply.status, auth.slice(0, 8)).toBe(200);
      expect(reply.body.data).toHaveLength(1);
    }
    expect((await get(sb, '/usage_stats', token)).status).toBe(403);
    expect((await lookup(sb, US, undefined, token)).status).toBe(403);
  });
});

describe('webhook URLs', () => {
  it('refuses port 0 and a raw space with 400, uncharged', async () => {
    sb = await startSandbox({ port: 0, seed: 3 });
    const before = sb.account().creditsUsed;
    for (const url of [
      'https://hooks.example.com:0/dnc',
      'https://hooks.example.com/a b',
      'https://hooks.example.com/dnc?x=a b',
      'https://hooks.example.com/a\tb',
    ]) {
      const reply = await lookup(sb, '+61412345101', url);
      expect(reply.status, url).toBe(400);
    }
    expect(sb.account().creditsUsed).toBe(before);
    expect((await lookup(sb, '+61412345101', 'https://hooks.example.com/a%20b')).status).toBe(202);
  });
});

describe('usage', () => {
  it('validates the query before an injected failure: a malformed request is 400, a valid one 500', async () => {
    sb = await startSandbox({ port: 0, seed: 3, usageFailure: true });
    for (const q of [
      '?num_billing_periods=0',
      '?num_billing_periods=101',
      '?id=0',
      '?id=1&cursor=x',
      '?year=2026',
      '?id=1&id=2',
      '?id=abc',
    ]) {
      const reply = await get(sb, `/v2/usage_stats${q}`);
      expect(reply.status, q).toBe(400);
    }
    expect((await get(sb, '/v2/usage_stats')).status).toBe(500);
    expect((await get(sb, '/v2/usage_stats?num_billing_periods=3')).status).toBe(500);
    expect((await get(sb, '/usage_stats')).status).toBe(500);
  });
});
