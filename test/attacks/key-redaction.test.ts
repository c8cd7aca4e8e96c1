// The API key never printed or written: every error path, spawned, scanning stdout, stderr and every file written.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIO } from '../../src/io.js';
import { redactingIO } from '../../src/redact.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { spawnDnc, type SpawnResult } from '../helpers/cli.js';

const KEY = 'sk_live_Zq8vR2mN5tY7wK3pL9xB4cD6';
let sb: Sandbox;
let dir: string;

beforeAll(async () => {
  sb = await startSandbox({ port: 0, key: KEY, allowInsecureWebhooks: true, timeScale: 0.01, seed: 5 });
});
afterAll(async () => {
  await sb.close();
});

/** Every file under `root`, with its bytes. */
function filesUnder(root: string): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (const name of readdirSync(root)) {
    const p = path.join(root, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push([p, readFileSync(p)]);
  }
  return out;
}

/** Runs dnc in a scratch folder that is also its HOME and XDG folders, then asserts the key is nowhere. */
async function run(
  argv: string[],
  env: Record<string, string | undefined> = {},
  setup?: (dir: string) => void,
): Promise<SpawnResult> {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-redact-'));
  try {
    setup?.(dir);
    const before = new Set(
      filesUnder(dir)
        .filter(([, b]) => b.includes(KEY))
        .map(([p]) => p),
    );
    const r = await spawnDnc(argv, {
      cwd: dir,
      env: {
        HOME: dir,
        XDG_STATE_HOME: path.join(dir, 'state'),
        XDG_CACHE_HOME: path.join(dir, 'cache'),
        XDG_CONFIG_HOME: path.join(dir, 'config'),
        ...env,
      },
    });
    expect(r.stdout, 'stdout').not.toContain(KEY);
    expect(r.stderr, 'stderr').not.toContain(KEY);
    // Files the test itself put the key in (a config file, a key file) are the user's; nothing else may hold it.
    const leaked = filesUnder(dir)
      .filter(([p, b]) => !before.has(p) && b.includes(KEY))
      .map(([p]) => p);
    expect(leaked, 'files written').toEqual([]);
    return r;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('configuration errors name the variable, not its value', () => {
  it('DNC_BASE_URL holding the key', async () => {
    const r = await run(['usage'], { DNC_BASE_URL: KEY, DNC_API_KEY: KEY });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the base URL given by DNC_BASE_URL is not a URL');
  });

  it('the key pasted as the base URL only (not otherwise known as the key)', async () => {
    const r = await run(['usage', '--base-url', KEY, '--api-key-file', 'key.txt'], {}, (d) =>
      writeFileSync(path.join(d, 'key.txt'), `${KEY}\n`),
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the base URL given by --base-url is not a URL');
  });

  it('a base URL carrying the key as credentials', async () => {
    const r = await run(['usage'], { DNC_BASE_URL: `https://user:${KEY}@api.example.com` });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('must not carry credentials');
  });

  it('a config file whose base_url is the key', async () => {
    const r = await run(['check', '+12025550122'], {}, (d) => {
      mkdirSync(path.join(d, 'config', 'dnc'), { recursive: true });
      writeFileSync(
        path.join(d, 'config', 'dnc', 'config.json'),
        JSON.stringify({ base_url: `ftp://${KEY}`, api_key: KEY }),
      );
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/"base_url" in .*config\.json must use https/);
  });

  it('--webhook-url with the key as its password, the key known or not', async () => {
    for (const env of [{ DNC_API_KEY: KEY }, { DNC_API_KEY: 'sbx-other-key' }]) {
      const r = await run(['check', '+61412345101', '--webhook-url', `https://u:${KEY}@hooks.example.com/x`], {
        DNC_BASE_URL: sb.baseUrl,
        ...env,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        "--webhook-url 'https://***@hooks.example.com/x' cannot be used: it carries credentials",
      );
    }
  });

  it('--webhook-url with the key in its query or path (raw, percent-encoded once or twice): refused before anything is sent or journaled', async () => {
    const encoded = [...KEY].map((c) => '%' + c.charCodeAt(0).toString(16)).join('');
    for (const url of [
      `http://127.0.0.1:9/hooks?token=${KEY}`,
      `http://127.0.0.1:9/hooks/${encoded}`,
      `http://127.0.0.1:9/hooks/${encoded.replaceAll('%', '%25')}`,
    ]) {
      const env = { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY };
      const before = sb.requests().length;
      const check = await run(['check', '+61412345101', '--webhook-url', url, '--allow-insecure-webhook-url'], env);
      expect(check.code, check.stderr).toBe(2);
      expect(check.stderr).toContain('--webhook-url carries the API key');
      const batch = await run(
        ['batch', 'calls.csv', '-o', 'out.csv', '--webhook-all', '--webhook-url', url, '--allow-insecure-webhook-url'],
        env,
        (d) => writeFileSync(path.join(d, 'calls.csv'), 'phone\n+61412345093\n'),
      );
      expect(batch.code, batch.stderr).toBe(2);
      expect(batch.stderr).toContain('[E_WEBHOOK_URL]: --webhook-url carries the API key');
      expect(sb.requests().length, 'nothing sent').toBe(before);
    }
  });

  it('--webhook-url with the key upper-cased, in hex, or in base64 or base64url inside a longer token: refused, nothing sent', async () => {
    const token = (before: string, encode: BufferEncoding) => Buffer.from(`${before}${KEY}:2026`).toString(encode);
    const forms = [
      `http://127.0.0.1:9/hooks?token=${KEY.toUpperCase()}`,
      `http://127.0.0.1:9/hooks/${Buffer.from(KEY).toString('hex').toUpperCase()}`,
      `http://127.0.0.1:9/hooks?auth=${encodeURIComponent(token('', 'base64'))}`,
      `http://127.0.0.1:9/hooks?auth=${token('u:', 'base64url')}`,
      `http://127.0.0.1:9/hooks#${token('id=', 'base64url')}`,
    ];
    const env = { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY };
    for (const url of forms) {
      const before = sb.requests().length;
      const check = await run(['check', '+61412345101', '--webhook-url', url, '--allow-insecure-webhook-url'], env);
      expect(check.code, `${url}: ${check.stderr}`).toBe(2);
      expect(check.stderr).toContain('--webhook-url carries the API key');
      expect(sb.requests().length, 'nothing sent').toBe(before);
    }
  });

  it("commander's echo of a mistyped --api_key=KEY", async () => {
    const r = await run(['check', '--api_key=' + KEY, '+12025550122'], { DNC_BASE_URL: sb.baseUrl });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown option '--api_key=***'");
  });

  it('a wrong key refused by the service (403)', async () => {
    const r = await run(['usage', '--verbose', '--api-key', `${KEY}x`], { DNC_BASE_URL: sb.baseUrl });
    expect(r.code).toBe(4);
  });
});

describe('successful runs', () => {
  it('check, batch in webhook mode and usage with --verbose: the key in no line and no file', async () => {
    const env = { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: KEY };
    const check = await run(['check', '+12025550122', '--verbose'], env);
    expect(check.code).toBe(0);
    expect(check.stderr).toMatch(/authorization: Bearer \*\*\*/i);
    const batch = await run(
      [
        'batch',
        'calls.csv',
        '-o',
        'out.csv',
        '--verbose',
        '--webhook-url',
        'http://127.0.0.1:9/hooks/Jr6tQm2yVb0sXw9LkPz3dA',
        '--allow-insecure-webhook-url',
      ],
      env,
      (d) => writeFileSync(path.join(d, 'calls.csv'), 'name,phone\na,+61412345093\nb,+12025550122\n'),
    );
    expect(batch.code, batch.stderr).toBe(8);
    const usage = await run(['usage', '--verbose', '--json'], env);
    expect(usage.code).toBe(0);
  });
});

describe('a hook on the redacted stream', () => {
  it('wraps the redacting write as a spinner hooks stream.write (ora: it calls the write it found), and still redacts', () => {
    const io = createTestIO();
    const stderr = redactingIO(io, [KEY]).stderr;
    const found = stderr.write;
    const seen: string[] = [];
    stderr.write = ((chunk: string, ...rest: unknown[]) => {
      seen.push(chunk);
      return (found as (...a: unknown[]) => boolean).call(stderr, chunk, ...rest);
    }) as typeof stderr.write;
    stderr.write(`key ${KEY}\n`);
    stderr.write = found;
    stderr.write('after\n');
    expect(seen).toEqual([`key ${KEY}\n`]);
    expect(io.err()).toBe('key ***\nafter\n');
  });
});
