// `dnc sandbox`: runs the local service emulator on 127.0.0.1 until SIGINT/SIGTERM, printing its base URL and key first.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { rawStream } from '../redact.js';
import { parseIntegerOption } from '../config.js';
import type { Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from '../main.js';
import type { AccountSpec, SandboxOptions } from '../sandbox/index.js';

interface SandboxFlags {
  port?: string;
  key?: string;
  creditLimit?: string;
  plan?: string;
  accounts?: string;
  latencyMs?: string;
  timeScale?: string;
  duplicatePushRate?: string;
  allowInsecureWebhooks?: boolean;
  seed?: string;
  costs?: string;
  countries?: string;
  transientFailures?: string;
  upstreamFailureRate?: string;
  usageFailure?: boolean;
  detach?: boolean;
}

/** The options given on the command line (not defaults), as arguments for the detached sandbox; --detach itself left out. */
function cliArguments(command: Command): string[] {
  const args: string[] = [];
  for (const option of command.options) {
    const key = option.attributeName();
    if (key === 'detach' || command.getOptionValueSource(key) !== 'cli') continue;
    const value = command.getOptionValue(key) as unknown;
    if (value === true) args.push(option.long!);
    else if (typeof value === 'string') args.push(option.long!, value);
  }
  return args;
}

export function registerSandbox(program: Command, host: CommandHost): void {
  const command = program
    .command('sandbox')
    .description('run a local emulator of the service on 127.0.0.1 (prints DNC_BASE_URL and DNC_API_KEY, runs until Ctrl-C)')
    .option('--port <port>', 'port to listen on; 0 picks a free one', '0')
    .option('--key <key>', 'API key of the default account')
    .option('--credit-limit <n>', 'credit limit of the default account per billing period (default 10000)')
    .option('--plan <plan>', 'billing plan of the default account: monthly or annual', 'monthly')
    .option('--accounts <file>', 'JSON file of accounts (keys, plans, limits, usage history, resellers) replacing the default account')
    .option('--latency-ms <ms>', 'delay added to every service answer', '0')
    .option('--time-scale <s>', 'multiplies every service duration (push delay, retry backoff, 24 h expiry, 10 s reply limit)', '1')
    .option('--duplicate-push-rate <r>', 'probability 0..1 that a delivered push is sent once more', '0')
    .option('--allow-insecure-webhooks', 'accept http:// and loopback webhook URLs (local receivers such as `dnc listen`)')
    .option('--seed <n>', 'seed for correlation ids, duplicates and random failures (reproducible runs)')
    .option('--costs <list>', 'credits per country, e.g. US=1,GB=2 (merged over the defaults)')
    .option('--countries <list>', 'supported countries, e.g. US,GB,AU (default: US,GB,DE,IE,BE,NZ,ES,AU)')
    .option('--transient-failures <n>', 'how many first attempts of a …991/…992 number fail', '2')
    .option('--upstream-failure-rate <r>', 'probability 0..1 that any register attempt fails (uncharged 502/504)', '0')
    .option('--usage-failure', 'usage endpoints answer 500 (switch at run time with POST /_sandbox/usage-failure)')
    .option('--detach', 'start in the background, wait until it is ready, print export lines for DNC_BASE_URL, DNC_API_KEY and DNC_SANDBOX_PID, and return')
    .addHelpText(
      'after',
      `
Number rules (last three digits): 990 invalid_phone_number (charged), 991/992 upstream timeout/error
on the first attempts, 993/994 always, 995/996 billing_error charged/not, 997 lookup_expired;
anything else succeeds, on a register when the last digit is odd. See docs/sandbox.md.

In a script:
  eval "$(dnc sandbox --detach --credit-limit 1000)"   # exports DNC_BASE_URL, DNC_API_KEY, DNC_SANDBOX_PID
  dnc check +12025550100
  kill $DNC_SANDBOX_PID`,
    );
  host.action(command, async (ctx, cmd) => {
    const flags = cmd.opts<SandboxFlags>();
    if (flags.detach) {
      const { runDetached } = await import('./sandbox-detach.js');
      return runDetached(ctx, cliArguments(cmd));
    }
    return run(ctx, flags);
  });
}

async function run(ctx: Context, flags: SandboxFlags): Promise<number> {
  const options = await toOptions(ctx, flags);
  if (ctx.verbose) {
    // The request log already has the key redacted.
    options.onRequest = (r) => {
      const query = new URLSearchParams(r.query).toString();
      ctx.debug(`sandbox: ${r.method} ${r.path}${query ? `?${query}` : ''} → ${r.status}${r.account ? ` (${r.account})` : ''}`);
    };
    options.onPush = (p) =>
      ctx.debug(`sandbox: push ${p.correlationId} attempt ${p.attempt}${p.duplicate ? ' (duplicate)' : ''} → ${p.status ?? p.error} ${p.outcome}`);
  }
  const { startSandbox } = await import('../sandbox/index.js');
  let sandbox;
  try {
    sandbox = await startSandbox(options);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError('E_SANDBOX_LISTEN', `cannot listen on 127.0.0.1:${options.port}: ${code ?? String(err)}`, {
      hint: code === 'EADDRINUSE' ? 'another process uses that port: pick another with --port, or --port 0 for any free one' : undefined,
      cause: err,
    });
  }
  writeLine(ctx.io.stdout, `DNC_BASE_URL=${sandbox.baseUrl}`);
  // The emulator's own key, printed by design (it may equal a configured key, which the output layer would mask).
  writeLine(rawStream(ctx.io.stdout), `DNC_API_KEY=${sandbox.apiKey}`);
  const acct = sandbox.account();
  ctx.info(
    `sandbox: ${acct.customerName}, ${acct.plan} plan, ${acct.creditsUsed}/${acct.creditLimit} credits used` +
      (options.timeScale !== undefined && options.timeScale !== 1 ? `, time scale ${options.timeScale}` : '') +
      (options.allowInsecureWebhooks ? ', insecure webhook URLs allowed' : ''),
  );
  ctx.info(`sandbox: introspection under ${sandbox.baseUrl}/_sandbox/ (requests, lookups, pushes, account); Ctrl-C stops`);
  await new Promise<void>((resolve) => {
    const off = ctx.interrupts.on(() => {
      off();
      resolve();
    });
  });
  await sandbox.close();
  ctx.info('sandbox: stopped');
  return ExitCode.OK;
}

function parseRate(name: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw usageError('E_USAGE', `${name} must be a number from 0 to 1, got '${raw}'`);
  }
  return value;
}

function parseCountryList(raw: string): string[] {
  const list = raw.split(',').map((c) => c.trim().toUpperCase()).filter(Boolean);
  for (const c of list) {
    if (!/^[A-Z]{2}$/.test(c)) throw usageError('E_USAGE', `--countries: '${c}' is not an ISO 3166-1 alpha-2 code`);
  }
  return list;
}

async function toOptions(ctx: Context, f: SandboxFlags): Promise<SandboxOptions> {
  const o: SandboxOptions = {
    port: parseIntegerOption('--port', f.port ?? '0', 0, 65535),
    latencyMs: parseIntegerOption('--latency-ms', f.latencyMs ?? '0', 0, 600_000),
    duplicatePushRate: parseRate('--duplicate-push-rate', f.duplicatePushRate ?? '0'),
    upstreamFailureRate: parseRate('--upstream-failure-rate', f.upstreamFailureRate ?? '0'),
    transientFailures: parseIntegerOption('--transient-failures', f.transientFailures ?? '2', 0, 1000),
    allowInsecureWebhooks: f.allowInsecureWebhooks === true,
    usageFailure: f.usageFailure === true,
  };
  const scale = Number(f.timeScale ?? '1');
  if (!Number.isFinite(scale) || scale <= 0) {
    throw usageError('E_USAGE', `--time-scale must be a number above 0, got '${f.timeScale}'`, {
      hint: 'e.g. --time-scale 0.001 makes 24 hours pass in 86.4 seconds',
    });
  }
  o.timeScale = scale;
  if (f.plan !== undefined) {
    if (f.plan !== 'monthly' && f.plan !== 'annual') throw usageError('E_USAGE', `--plan must be monthly or annual, got '${f.plan}'`);
    o.plan = f.plan;
  }
  if (f.key !== undefined) {
    if (f.key.length < 4 || /\s/.test(f.key)) throw usageError('E_USAGE', '--key must be at least 4 characters without spaces');
    o.key = f.key;
  }
  if (f.creditLimit !== undefined) o.creditLimit = parseIntegerOption('--credit-limit', f.creditLimit, 0);
  if (f.seed !== undefined) o.seed = parseIntegerOption('--seed', f.seed, 0, 2 ** 32 - 1);
  if (f.countries !== undefined) o.supportedCountries = parseCountryList(f.countries);
  if (f.costs !== undefined) {
    const costs: Record<string, number> = {};
    for (const part of f.costs.split(',').filter((p) => p.trim() !== '')) {
      const m = /^\s*([A-Za-z]{2})\s*=\s*(\d+)\s*$/.exec(part);
      if (!m) throw usageError('E_USAGE', `--costs: '${part}' is not CC=N`, { hint: 'e.g. --costs US=1,GB=2,AU=3' });
      costs[m[1]!.toUpperCase()] = Number(m[2]);
    }
    o.costs = costs;
  }
  if (f.accounts !== undefined) o.accounts = await readAccounts(ctx, f.accounts);
  return o;
}

async function readAccounts(ctx: Context, file: string): Promise<AccountSpec[]> {
  const { validateAccountSpecs } = await import('../sandbox/index.js');
  const path = await import('node:path');
  const full = path.resolve(ctx.cwd, file);
  let text: string;
  try {
    text = await readFile(full, 'utf8');
  } catch (err) {
    throw usageError('E_USAGE', `cannot read accounts file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return validateAccountSpecs(JSON.parse(text));
  } catch (err) {
    throw usageError('E_USAGE', `accounts file ${file}: ${err instanceof Error ? err.message : String(err)}`, {
      hint: 'see docs/sandbox.md, "Accounts file", for the format (fixtures/sandbox/accounts.json is an example)',
    });
  }
}
