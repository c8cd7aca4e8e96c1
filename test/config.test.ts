// Configuration: flag > environment > config file, the default file location, key files, and what is missing.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_STRING_KEYS, resolveServiceConfig } from '../src/config.js';
import { defaultConfigPath } from '../src/paths.js';
import { VERSION } from '../src/version.js';
import { BIN, NO_HOME, REPO_ROOT, dncErrorOf, runDnc } from './helpers/cli.js';
import { lookupHeaders, startStub, type StubServer } from './service/stub-server.js';

let dir: string;
let stub: StubServer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dnc-config-'));
  stub = await startStub(() => ({
    status: 200,
    body: {
      status: 'succeeded',
      error_code: null,
      correlation_id: 'c0ffee00-0000-4000-8000-000000000001',
      phone_number: '+12025550100',
      country: 'US',
      do_not_call: false,
      timestamp: '2026-11-21T23:08:03.123456+00:00',
      dnc_list_source: 'https://sandbox.dnc.invalid/registers/US',
      cost: { credits_used_for_query: 1, total_credits_used: 1, credit_limit: 100 },
    },
    headers: lookupHeaders(1, 99, 100, 'c0ffee00-0000-4000-8000-000000000001'),
  }));
});

afterAll(async () => {
  await stub.close();
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  stub.requests.length = 0;
});

async function writeJson(file: string, value: unknown): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(value));
  return file;
}

describe('resolveServiceConfig', () => {
  it('flag beats environment beats config file, and each value keeps its source', async () => {
    const file = await writeJson(path.join(dir, 'prec', 'config.json'), {
      base_url: 'https://file.example',
      api_key: 'file-key-000000',
      forwarded_host: 'file.reseller',
    });
    const env = { DNC_CONFIG: file, DNC_BASE_URL: 'https://env.example', DNC_API_KEY: 'env-key-000000' };
    const all = await resolveServiceConfig({ baseUrl: 'https://flag.example', apiKey: 'flag-key-000000' }, env, dir);
    expect(all.baseUrl).toEqual({ value: 'https://flag.example', source: 'flag' });
    expect(all.apiKey).toEqual({ value: 'flag-key-000000', source: 'flag' });
    expect(all.forwardedHost).toEqual({ value: 'file.reseller', source: 'config' });

    const envOnly = await resolveServiceConfig({}, env, dir);
    expect(envOnly.baseUrl).toEqual({ value: 'https://env.example', source: 'env' });
    expect(envOnly.apiKey).toEqual({ value: 'env-key-000000', source: 'env' });

    const fileOnly = await resolveServiceConfig({ config: file }, {}, dir);
    expect(fileOnly.baseUrl).toEqual({ value: 'https://file.example', source: 'config' });
    expect(fileOnly.apiKey).toEqual({ value: 'file-key-000000', source: 'config' });
    expect(fileOnly.configPath).toBe(file);
  });

  it('an empty environment variable does not hide the config file', async () => {
    const file = await writeJson(path.join(dir, 'empty-env', 'config.json'), {
      base_url: 'https://file.example',
      api_key: 'file-key-000000',
    });
    const c = await resolveServiceConfig({ config: file }, { DNC_BASE_URL: '', DNC_API_KEY: '' }, dir);
    expect(c.baseUrl.source).toBe('config');
  });

  it("an empty forwarded host is refused where it applies (it would send a reseller's requests unattributed)", async () => {
    const file = await writeJson(path.join(dir, 'empty-forwarded', 'config.json'), {
      base_url: 'https://file.example',
      api_key: 'file-key-000000',
      forwarded_host: '',
    });
    await expect(resolveServiceConfig({ config: file }, {}, dir)).rejects.toThrow(/"forwarded_host" is empty/);
    await expect(resolveServiceConfig({ config: file }, { DNC_FORWARDED_HOST: ' ' }, dir)).rejects.toThrow(
      /DNC_FORWARDED_HOST is set but empty/,
    );
    const env = await resolveServiceConfig({ config: file }, { DNC_FORWARDED_HOST: 'env.reseller' }, dir);
    expect(env.forwardedHost).toEqual({ value: 'env.reseller', source: 'env' });
    const flag = await resolveServiceConfig(
      { config: file, forwardedHost: 'flag.reseller' },
      { DNC_FORWARDED_HOST: '' },
      dir,
    );
    expect(flag.forwardedHost).toEqual({ value: 'flag.reseller', source: 'flag' });
  });

  it('default file: $XDG_CONFIG_HOME/dnc/config.json, else ~/.config/dnc/config.json', async () => {
    const xdg = path.join(dir, 'xdg');
    const home = path.join(dir, 'home');
    await writeJson(path.join(xdg, 'dnc', 'config.json'), {
      base_url: 'https://xdg.example',
      api_key: 'xdg-key-000000',
    });
    await writeJson(path.join(home, '.config', 'dnc', 'config.json'), {
      base_url: 'https://home.example',
      api_key: 'home-key-000000',
    });
    expect(defaultConfigPath({ XDG_CONFIG_HOME: xdg }, home)).toBe(path.join(xdg, 'dnc', 'config.json'));
    expect((await resolveServiceConfig({}, { XDG_CONFIG_HOME: xdg }, home)).baseUrl.value).toBe('https://xdg.example');
    expect((await resolveServiceConfig({}, {}, home)).baseUrl.value).toBe('https://home.example');
    // A relative XDG_CONFIG_HOME is invalid per the XDG spec and ignored.
    expect((await resolveServiceConfig({}, { XDG_CONFIG_HOME: 'relative' }, home)).baseUrl.value).toBe(
      'https://home.example',
    );
  });

  it('--config beats DNC_CONFIG; an explicit file that is missing is an error, the default one is not', async () => {
    const a = await writeJson(path.join(dir, 'a.json'), { base_url: 'https://a.example', api_key: 'a-key-000000' });
    const b = await writeJson(path.join(dir, 'b.json'), { base_url: 'https://b.example', api_key: 'b-key-000000' });
    expect((await resolveServiceConfig({ config: a }, { DNC_CONFIG: b }, dir)).baseUrl.value).toBe('https://a.example');
    expect((await resolveServiceConfig({}, { DNC_CONFIG: b }, dir)).baseUrl.value).toBe('https://b.example');
    const missing = await dncErrorOf(resolveServiceConfig({ config: path.join(dir, 'nope.json') }, {}, dir));
    expect([missing.code, missing.exitCode]).toEqual(['E_CONFIG_UNREADABLE', 2]);
    expect(missing.message).toContain('nope.json');
    const c = await resolveServiceConfig(
      {},
      { DNC_BASE_URL: 'https://x.example', DNC_API_KEY: 'k-000000' },
      path.join(dir, 'no-home'),
    );
    expect(c.baseUrl.source).toBe('env');
  });

  it('--api-key-file is read and trimmed, and beats DNC_API_KEY', async () => {
    const keyFile = path.join(dir, 'key.txt');
    await writeFile(keyFile, '  file-held-key-123456\n');
    const c = await resolveServiceConfig(
      { apiKeyFile: keyFile },
      { DNC_BASE_URL: 'https://x.example', DNC_API_KEY: 'env-key-000000' },
      dir,
    );
    expect(c.apiKey).toEqual({ value: 'file-held-key-123456', source: 'flag' });
    await writeFile(path.join(dir, 'empty.txt'), '\n');
    const empty = await dncErrorOf(
      resolveServiceConfig({ apiKeyFile: path.join(dir, 'empty.txt') }, { DNC_BASE_URL: 'https://x.example' }, dir),
    );
    expect([empty.code, empty.exitCode]).toEqual(['E_CONFIG_INVALID', 2]);
  });

  it('a path the config file holds may start with ~, the home folder, as a shell reads it (docs/team.md)', async () => {
    const home = path.join(dir, 'tilde-home');
    await mkdir(path.join(home, 'lists'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(home, '.dnc-key'), 'tilde-held-key-000001\n', { mode: 0o600 });
    const config = await writeJson(path.join(dir, 'tilde', 'config.json'), {
      base_url: 'https://x.example',
      api_key_file: '~/.dnc-key',
    });
    const c = await resolveServiceConfig({ config }, {}, home);
    expect(c.apiKey).toEqual({ value: 'tilde-held-key-000001', source: 'config' });
    // The internal list's file too: the list is made in the home folder, not in a folder named "~" here.
    await writeJson(config, { suppression_list: '~/lists/ours.sqlite' });
    const added = await runDnc(['--config', config, 'suppress', 'add', '+12025550143'], { homedir: home, cwd: dir });
    expect(added.code, added.stderr).toBe(0);
    expect((await stat(path.join(home, 'lists', 'ours.sqlite'))).isFile()).toBe(true);
    expect(existsSync(path.join(dir, '~'))).toBe(false);
    // Another user's home is not looked up: refused by name, not taken for a folder called "~bob".
    await writeJson(config, { base_url: 'https://x.example', api_key_file: '~bob/.dnc-key' });
    const other = await dncErrorOf(resolveServiceConfig({ config }, {}, home));
    expect([other.code, other.exitCode]).toEqual(['E_CONFIG_INVALID', 2]);
    expect(other.message).toContain('"api_key_file" starts with ~ followed by a user\'s name');
  });

  it('a config file that is not a JSON object, or has a non-string value, is refused with exit 2', async () => {
    await writeFile(path.join(dir, 'bad.json'), '{ base_url: nope');
    const bad = await dncErrorOf(resolveServiceConfig({ config: path.join(dir, 'bad.json') }, {}, dir));
    expect([bad.code, bad.exitCode]).toEqual(['E_CONFIG_INVALID', 2]);
    const typed = await writeJson(path.join(dir, 'typed.json'), { base_url: 42 });
    const wrong = await dncErrorOf(resolveServiceConfig({ config: typed }, {}, dir));
    expect(wrong.message).toContain('"base_url" must be a string');
  });

  it('a base URL that is not http(s), or carries credentials, is refused', async () => {
    const ftp = await dncErrorOf(resolveServiceConfig({ baseUrl: 'ftp://x.example', apiKey: 'k-000000' }, {}, dir));
    expect(ftp.exitCode).toBe(2);
    const creds = await dncErrorOf(
      resolveServiceConfig({ baseUrl: 'https://user:pw@x.example', apiKey: 'k-000000' }, {}, dir),
    );
    expect(creds.message).toContain('must not carry credentials');
  });
});

describe('through the command line', () => {
  it('missing base URL: exit 2 naming --base-url, DNC_BASE_URL and base_url in the config file', async () => {
    const r = await runDnc(['check', '+12025550100'], { env: { DNC_API_KEY: 'a-secret-key-1234567' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no service base URL is configured');
    expect(r.stderr).toContain('--base-url');
    expect(r.stderr).toContain('DNC_BASE_URL');
    expect(r.stderr).toContain('"base_url"');
    expect(r.stderr).not.toContain('a-secret-key-1234567');
    expect(stub.requests).toHaveLength(0);
  });

  it('missing key: exit 2 naming --api-key, DNC_API_KEY and api_key in the config file', async () => {
    const r = await runDnc(['check', '+12025550100'], { env: { DNC_BASE_URL: stub.baseUrl } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no API key is configured');
    expect(r.stderr).toContain('--api-key');
    expect(r.stderr).toContain('DNC_API_KEY');
    expect(r.stderr).toContain('"api_key"');
    expect(stub.requests).toHaveLength(0);
  });

  it('the key and forwarded host of each source reach the service, in precedence order', async () => {
    const file = await writeJson(path.join(dir, 'cli', 'config.json'), {
      base_url: stub.baseUrl,
      api_key: 'config-file-key-0001',
      forwarded_host: 'config.reseller.example',
    });
    const keyFile = path.join(dir, 'cli-key.txt');
    await writeFile(keyFile, 'key-file-key-0004\n');
    const runs: Array<[string[], Record<string, string>, string, string]> = [
      [['--config', file], {}, 'config-file-key-0001', 'config.reseller.example'],
      [
        [],
        { DNC_CONFIG: file, DNC_API_KEY: 'env-key-0002', DNC_FORWARDED_HOST: 'env.reseller.example' },
        'env-key-0002',
        'env.reseller.example',
      ],
      [
        ['--config', file, '--api-key', 'flag-key-0003', '--forwarded-host', 'flag.reseller.example'],
        { DNC_API_KEY: 'env-key-0002' },
        'flag-key-0003',
        'flag.reseller.example',
      ],
      [
        ['--config', file, '--api-key-file', keyFile],
        { DNC_API_KEY: 'env-key-0002' },
        'key-file-key-0004',
        'config.reseller.example',
      ],
    ];
    for (const [flags, env, key, host] of runs) {
      const r = await runDnc([...flags, '--json', 'check', '+12025550100'], { env });
      expect(r.code, r.stderr).toBe(0);
      const seen = stub.requests.at(-1)!;
      expect(seen.headers.authorization).toBe(`Bearer ${key}`);
      expect(seen.headers['x-forwarded-host']).toBe(host);
      expect(r.stdout + r.stderr).not.toContain(key);
    }
    expect(stub.requests).toHaveLength(runs.length);
  });

  it('--verbose says where each value came from, with the key as ***', async () => {
    const file = await writeJson(path.join(dir, 'verbose', 'config.json'), {
      api_key: 'verbose-config-key-0006',
      forwarded_host: 'v.reseller.example',
    });
    const r = await runDnc(['--verbose', '--config', file, 'check', '+12025550100'], {
      env: { DNC_BASE_URL: stub.baseUrl },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `config: base URL ${stub.baseUrl} (env); API key *** (config file ${file}); forwarded host v.reseller.example (config file ${file})`,
    );
    expect(r.stdout + r.stderr).not.toContain('verbose-config-key-0006');
  });

  it('XDG_CONFIG_HOME is where the default config file is found', async () => {
    const xdg = path.join(dir, 'cli-xdg');
    await writeJson(path.join(xdg, 'dnc', 'config.json'), { base_url: stub.baseUrl, api_key: 'xdg-cli-key-0005' });
    const r = await runDnc(['check', '+12025550100'], { env: { XDG_CONFIG_HOME: xdg } });
    expect(r.code, r.stderr).toBe(0);
    expect(stub.requests[0]!.headers.authorization).toBe('Bearer xdg-cli-key-0005');
  });
});

describe('secrets given on the command line', () => {
  it('--api-key, or a password in --store: one warning on stderr naming the flag and the safer way, never the value', async () => {
    const key = 'argv-key-0000000007';
    const env = { DNC_BASE_URL: stub.baseUrl };
    const flagged = await runDnc(['--quiet', '--api-key', key, 'check', '+12025550100'], { env });
    expect(flagged.code, flagged.stderr).toBe(0);
    const warnings = flagged.stderr.split('\n').filter((l) => l.startsWith('dnc: warning:'));
    expect(warnings).toEqual([
      'dnc: warning: --api-key puts the key on the command line, where other users of this machine can read it (ps, ' +
        '/proc/PID/cmdline) and the shell history keeps it; give it in DNC_API_KEY, --api-key-file FILE or ' +
        '"api_key_file" in the config file instead',
    ]);
    expect(flagged.stdout + flagged.stderr).not.toContain(key);
    const password = 'argv-pw-0000000008';
    const store = await runDnc(['--store', `postgresql://dnc:${password}@127.0.0.1:1/dnc`, 'check', '+12025550100'], {
      env: { ...env, DNC_API_KEY: key },
    });
    expect(store.stderr.match(/--store carries a password/g), store.stderr).toHaveLength(1);
    expect(store.stderr).toContain('give it in PGPASSWORD or ~/.pgpass (mode 0600) instead');
    expect(store.stdout + store.stderr).not.toContain(password);
    // The safer ways say nothing: the key from the environment, a store URL without a password.
    const quiet = await runDnc(['--quiet', '--store', 'postgresql://dnc@127.0.0.1:1/dnc', 'check', '+12025550100'], {
      env: { ...env, DNC_API_KEY: key },
    });
    expect(quiet.stderr).not.toContain('warning');
  });
});

describe('docs/configuration.md', () => {
  it('its table of config keys names every key dnc reads from the file, and no other', async () => {
    const page = await readFile(path.join(REPO_ROOT, 'docs', 'configuration.md'), 'utf8');
    const table = page.slice(page.indexOf('| key | value | as |'));
    const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
    const documented = rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]));
    // The keys that are not strings are read by name in src/config.ts (configValues, readConfigFile).
    expect(documented.sort()).toEqual([...CONFIG_STRING_KEYS, 'calling', 'profiles', 'validity_days'].sort());
  });
});

describe('who else may read or write the config and key files (as ssh)', () => {
  /** A config file holding a key, with the given mode, in a folder of the given mode. */
  async function configWith(
    name: string,
    mode: number,
    dirMode = 0o700,
    value: Record<string, unknown> = { base_url: stub.baseUrl, api_key: 'mode-key-00000001' },
  ) {
    const file = await writeJson(path.join(dir, 'modes', name, 'config.json'), value);
    await chmod(file, mode);
    await chmod(path.dirname(file), dirMode);
    return file;
  }

  it('a config file others may write (0666, 0664, 0646) is refused with exit 2 and the chmod to run; nothing is sent', async () => {
    for (const mode of [0o666, 0o664, 0o646, 0o620]) {
      const file = await configWith(`w${mode.toString(8)}`, mode);
      const r = await runDnc(['--config', file, 'check', '+12025550100']);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `dnc: error [E_CONFIG_INSECURE]: the config file ${file} is writable by others (mode 0${mode.toString(8)}): dnc will not use it`,
      );
      expect(r.stderr).toContain(`chmod go-w ${file}`);
      expect(r.stderr).not.toContain('mode-key-00000001');
    }
    // Without a key in it too: base_url alone would send the key given elsewhere to whoever wrote it.
    const noKey = await configWith('nokey', 0o666, 0o700, { base_url: stub.baseUrl });
    expect((await runDnc(['--config', noKey, '--api-key', 'flag-key-00000009', 'check', '+12025550100'])).code).toBe(2);
    expect(stub.requests).toHaveLength(0);
  });

  it('a config folder others may write is refused (a sticky one such as /tmp is not)', async () => {
    const file = await configWith('openfolder', 0o600, 0o777);
    const r = await runDnc(['--config', file, 'check', '+12025550100']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the folder of the config file ${file} is writable by others (mode 0777)`);
    expect(r.stderr).toContain(`chmod go-w ${path.dirname(file)}`);
    const sticky = await configWith('sticky', 0o600, 0o1777);
    expect((await runDnc(['--config', sticky, 'check', '+12025550100'])).code).toBe(0);
    // The default location is checked as an explicit one is.
    const xdg = path.join(dir, 'modes', 'xdg');
    const dflt = await writeJson(path.join(xdg, 'dnc', 'config.json'), {
      base_url: stub.baseUrl,
      api_key: 'mode-key-00000001',
    });
    await chmod(path.dirname(dflt), 0o770);
    expect((await runDnc(['check', '+12025550100'], { env: { XDG_CONFIG_HOME: xdg } })).code).toBe(2);
  });

  it('a key others may read is used, with a warning naming the chmod; 0600 and 0400 say nothing', async () => {
    for (const mode of [0o644, 0o640, 0o604]) {
      const file = await configWith(`r${mode.toString(8)}`, mode);
      const r = await runDnc(['--config', file, 'check', '+12025550100']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(
        `dnc: warning: the config file ${file} holds the API key and others can read it (mode 0${mode.toString(8)}); run: chmod 600 ${file}`,
      );
    }
    for (const mode of [0o600, 0o400]) {
      // (--quiet: warnings only; the note about a home folder the tests give none of is informational.)
      const r = await runDnc([
        '--quiet',
        '--config',
        await configWith(`ok${mode.toString(8)}`, mode),
        'check',
        '+12025550100',
      ]);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
    }
    // Readable by others but holding no key: nothing to say.
    const plain = await configWith('plain', 0o644, 0o755, { base_url: stub.baseUrl });
    const r = await runDnc(['--quiet', '--config', plain, 'check', '+12025550100'], {
      env: { DNC_API_KEY: 'env-key-00000009' },
    });
    expect(r.stderr).toBe('');
  });

  it('a link is judged by the file it resolves to and every folder above that, as ssh does', async () => {
    const env = { DNC_BASE_URL: stub.baseUrl };
    // The link lies in a private folder; what it points at lies in a folder anyone may write (not sticky).
    const open = path.join(dir, 'modes', 'open-target');
    await mkdir(path.join(open, 'inner'), { recursive: true });
    const target = await writeJson(path.join(open, 'config.json'), { base_url: stub.baseUrl, api_key: 'link-key-01' });
    await chmod(target, 0o600);
    const key = path.join(open, 'inner', 'key.txt');
    await writeFile(key, 'link-key-file-000002', { mode: 0o600 });
    await chmod(path.join(open, 'inner'), 0o700);
    await chmod(open, 0o777);
    const links = path.join(dir, 'modes', 'links');
    await mkdir(links, { recursive: true });
    await chmod(links, 0o700);
    await symlink(target, path.join(links, 'config.json'));
    await symlink(key, path.join(links, 'key.txt'));
    const viaConfig = await runDnc(['--config', path.join(links, 'config.json'), 'check', '+12025550100']);
    expect(viaConfig.code, viaConfig.stderr).toBe(2);
    expect(viaConfig.stderr).toContain(
      `[E_CONFIG_INSECURE]: the folder ${open} above the config file ${path.join(links, 'config.json')} (a link to ` +
        `${target}) is writable by others (mode 0777): dnc will not use it`,
    );
    expect(viaConfig.stderr).toContain(`chmod go-w ${open}`);
    // A folder further up counts too: whoever may write it may rename the private folder below and put another.
    const viaKey = await runDnc(['--api-key-file', path.join(links, 'key.txt'), 'check', '+12025550100'], { env });
    expect(viaKey.code, viaKey.stderr).toBe(2);
    expect(viaKey.stderr).toContain(`the folder ${open} above the API key file ${path.join(links, 'key.txt')}`);
    const viaEnv = await runDnc(['check', '+12025550100'], { env: { DNC_CONFIG: path.join(links, 'config.json') } });
    expect(viaEnv.code).toBe(2);
    expect(stub.requests).toHaveLength(0);
    // Made safe, the same links are used, and the file read is the one judged.
    await chmod(open, 0o755);
    expect((await runDnc(['--quiet', '--config', path.join(links, 'config.json'), 'check', '+12025550100'])).code).toBe(
      0,
    );
    expect(stub.requests.at(-1)!.headers.authorization).toBe('Bearer link-key-01');
  });

  // Only root can give a file away; elsewhere the owner check is the same code, met by every file the user makes.
  it.skipIf(process.getuid?.() !== 0)(
    'a file or a folder above it that belongs to another user is refused: its owner may rewrite it',
    async () => {
      const owned = await configWith('owned', 0o600);
      await chown(owned, 65534, 65534);
      const byFile = await runDnc(['--config', owned, 'check', '+12025550100']);
      expect(byFile.code, byFile.stderr).toBe(2);
      expect(byFile.stderr).toContain(
        `[E_CONFIG_INSECURE]: the config file ${owned} belongs to another user (uid 65534)`,
      );
      const folder = await configWith('owned-folder', 0o600);
      await chown(path.dirname(folder), 65534, 65534);
      const byFolder = await runDnc(['--config', folder, 'check', '+12025550100']);
      expect(byFolder.code, byFolder.stderr).toBe(2);
      expect(byFolder.stderr).toContain(`the folder of the config file ${folder} belongs to another user (uid 65534)`);
      expect(stub.requests).toHaveLength(0);
    },
  );

  it("--api-key-file and a profile's api_key_file: refused when others may write them, a warning when they may read them", async () => {
    const keys = path.join(dir, 'modes', 'keys');
    await mkdir(keys, { recursive: true, mode: 0o700 });
    await chmod(keys, 0o700);
    const keyFile = path.join(keys, 'key.txt');
    await writeFile(keyFile, 'key-file-key-00000004\n');
    await chmod(keyFile, 0o646);
    const env = { DNC_BASE_URL: stub.baseUrl };
    const written = await runDnc(['--api-key-file', keyFile, 'check', '+12025550100'], { env });
    expect(written.code).toBe(2);
    expect(written.stderr).toContain(
      `[E_CONFIG_INSECURE]: the API key file ${keyFile} is writable by others (mode 0646)`,
    );
    await chmod(keyFile, 0o644);
    const read = await runDnc(['--api-key-file', keyFile, 'check', '+12025550100'], { env });
    expect(read.code).toBe(0);
    expect(read.stderr).toContain(
      `dnc: warning: the API key file ${keyFile} holds the API key and others can read it (mode 0644); run: chmod 600 ${keyFile}`,
    );
    expect(read.stderr).not.toContain('key-file-key-00000004');
    const profiled = await configWith('profile', 0o600, 0o700, {
      base_url: stub.baseUrl,
      profiles: { acme: { api_key_file: keyFile } },
    });
    await chmod(keyFile, 0o664);
    expect((await runDnc(['--config', profiled, '--profile', 'acme', 'check', '+12025550100'])).code).toBe(2);
    // A pipe is no file anyone could replace: `--api-key-file <(pass show dnc)` works.
    // (Spawned without blocking: the stub answers from this process.)
    const child = spawn(
      'bash',
      ['-c', `"${process.execPath}" "${BIN}" --quiet --api-key-file <(printf 'pipe-key-00000005') check +12025550100`],
      {
        env: { PATH: process.env.PATH ?? '', HOME: NO_HOME, ...env },
      },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const status = await new Promise((resolve) => child.on('close', resolve));
    expect(status, stderr).toBe(0);
    expect(stderr).toBe('');
    expect(stub.requests.at(-1)!.headers.authorization).toBe('Bearer pipe-key-00000005');
  });
});

describe('version', () => {
  it('VERSION in src/version.ts equals package.json, and is sent as User-Agent dnc/<version>', async () => {
    const pkg = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
    const r = await runDnc(['--base-url', stub.baseUrl, '--api-key', 'ua-key-000000', 'check', '+12025550100']);
    expect(r.code, r.stderr).toBe(0);
    expect(stub.requests[0]!.headers['user-agent']).toBe(`dnc/${pkg.version}`);
    const v = await runDnc(['--version']);
    expect(v.stdout.trim()).toBe(pkg.version);
  });
});
