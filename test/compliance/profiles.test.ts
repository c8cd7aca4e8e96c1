// Who scrubbed for whom: --seller/--san/--campaign, the config file, and profiles (--profile / DNC_PROFILE) for agencies scrubbing for several clients.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dnc, world, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.cleanup();
  w = undefined;
});

const manifest = (out: string) => JSON.parse(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8'));

describe('profiles and parties', () => {
  it('a profile gives base_url, api_key_file (beside the config), seller and san; flags win; the key is never written', async () => {
    w = await world();
    writeFileSync(path.join(w.dir, 'client-a.key'), `${w.sb.apiKey}\n`);
    const cfg = w.file('config.json', [
      JSON.stringify({
        seller: 'Agency Ltd',
        campaign: 'default campaign',
        profiles: {
          'client-a': {
            base_url: w.sb.baseUrl,
            api_key_file: 'client-a.key',
            forwarded_host: 'client-a.example',
            seller: 'Client A',
            san: 'SAN-A',
          },
        },
      }),
    ]);
    const env = { XDG_STATE_HOME: w.env.XDG_STATE_HOME!, XDG_CACHE_HOME: w.env.XDG_CACHE_HOME!, DNC_CONFIG: cfg };
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100']);
    const out = path.join(w.dir, 'out.csv');
    const r = await dnc(['--profile', 'client-a', 'batch', input, '-o', out], env);
    expect(r.code, r.stderr).toBe(0);
    expect(manifest(out).compliance.parties).toMatchObject({
      seller: 'Client A',
      san: 'SAN-A',
      campaign: 'default campaign',
      profile: 'client-a',
    });
    expect(readFileSync(out.replace(/\.csv$/, '.manifest.json'), 'utf8')).not.toContain(w.sb.apiKey);
    // The profile's forwarded_host reached the service on every lookup.
    const lookups = w.sb.requests().filter((q) => q.path === '/check_phone_number');
    expect(lookups.length).toBeGreaterThan(0);
    expect(lookups.map((q) => q.headers['x-forwarded-host'])).toEqual(lookups.map(() => 'client-a.example'));

    const r2 = await dnc(['batch', input, '-o', out, '--seller', 'Client B', '--campaign', 'Q1'], {
      ...env,
      DNC_PROFILE: 'client-a',
    });
    expect(r2.code, r2.stderr).toBe(0);
    expect(manifest(out).compliance.parties).toMatchObject({
      seller: 'Client B',
      san: 'SAN-A',
      campaign: 'Q1',
      profile: 'client-a',
    });

    // Without a profile, the top level applies (and there is no base URL there).
    const none = await dnc(['batch', input, '-o', out], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no service base URL');

    const unknown = await dnc(['--profile', 'client-z', 'batch', input, '-o', out], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('profile "client-z" is not defined');
    expect(unknown.stderr).toContain('defined profiles: client-a');
  });

  it('malformed profiles and values are refused with exit 2', async () => {
    w = await world();
    const input = w.file('calls.csv', ['name,phone', 'a,+12025550100']);
    for (const [body, message] of [
      [{ profiles: [] }, '"profiles" must be an object'],
      [{ profiles: { a: { seller: 5 } } }, '"profiles.a.seller" must be a string'],
      [{ profiles: { a: 'x' } }, 'profile "a" is not defined'],
      [{ validity_days: { uk: 28 } }, 'keys are "default" or country codes'],
    ] as const) {
      const cfg = w.file('c.json', [JSON.stringify(body)]);
      const r = await dnc(['--profile', 'a', 'batch', input], { ...w.env, DNC_CONFIG: cfg });
      expect(r.code, JSON.stringify(body)).toBe(2);
      expect(r.stderr).toContain(message);
    }
  });
});
