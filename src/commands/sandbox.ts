// `dnc sandbox`: runs the local service emulator on 127.0.0.1 until SIGINT/SIGTERM, printing its base URL and key
// first.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Option, type Command } from 'commander';
import { integerOption, parsedOption } from '../cli-options.js';
import { rawStream } from '../redact.js';
import type { Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import type { AccountSpec, SandboxOptions } from '../sandbox/index.js';

/** The flags as commander hands them over: every value parsed and checked while the command line is read. */
interface SandboxFlags {
  port: number;
  key?: string;
  creditLimit?: number;
  plan: 'monthly' | 'annual';
  accounts?: string;
  latencyMs: number;
  timeScale: number;
  duplicatePushRate: number;
  allowInsecureWebhooks?: boolean;
  seed?: number;
  costs?: Record<string, number>;
  countries?: string[];
  transientFailures: number;
  billingErrors?: number;
  upstreamFailureRate: number;
  usageFailure?: boolean;
  detach?: boolean;
  /** Set by `--detach` for the background sandbox: the folder of its output and log, removed on a clean stop. */
  detachedFolder?: string;
}

/**
 * The options given on the command line (not defaults), as arguments for the detached sandbox; --detach itself left
 * out.
 */
function cliArguments(command: Command): string[] {
  const args: string[] = [];
  for (const option of command.options) {
    const key = option.attributeName();
    if (key === 'detach' || key === 'detachedFolder' || command.getOptionValueSource(key) !== 'cli') continue;
    // Values are typed by now (see the options below): written back as the detached sandbox reads them.
    const value = command.getOptionValue(key) as unknown;
    if (value === true) args.push(option.long!);
    else if (typeof value === 'string' || typeof value === 'number') args.push(option.long!, String(value));
    else if (Array.isArray(value)) args.push(option.long!, value.join(','));
    else if (value && typeof value === 'object')
      args.push(
        option.long!,
        Object.entries(value)
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(','),
      );
  }
  return args;
}

export function registerSandbox(program: Command, host: CommandHost): void {
  const command = program
    .command('sandbox')
    .description(
      'run a local emulator of the service on 127.0.0.1 (prints DNC_BASE_URL and DNC_API_KEY, runs until Ctrl-C)',
    )
    .addOption(integerOption('--port <port>', 'port to listen on; 0 picks a free one', 0, 65_535).default(0))
    .addOption(parsedOption('--key <key>', 'API key of the default account', keyFlag))
    .addOption(
      integerOption('--credit-limit <n>', 'credit limit of the default account per billing period (default 10000)', 0),
    )
    .addOption(
      new Option('--plan <plan>', 'billing plan of the default account')
        .choices(['monthly', 'annual'])
        .default('monthly'),
    )
    .option(
      '--accounts <file>',
      'JSON file of accounts (keys, plans, limits, usage history, resellers) replacing the default account',
    )
    .addOption(integerOption('--latency-ms <ms>', 'delay added to every service answer', 0, 600_000).default(0))
    .addOption(
      parsedOption(
        '--time-scale <s>',
        'multiplies every service duration (push delay, retry backoff, 24 h expiry, 10 s reply limit)',
        timeScaleFlag,
      ).default(1),
    )
    .addOption(
      parsedOption(
        '--duplicate-push-rate <r>',
        'probability 0..1 that a delivered push is sent once more',
        rateFlag,
      ).default(0),
    )
    .option(
      '--allow-insecure-webhooks',
      'accept http:// and loopback webhook URLs (local receivers such as `dnc listen`)',
    )
    .addOption(
      integerOption(
        '--seed <n>',
        'seed for correlation ids, duplicates and random failures (reproducible runs)',
        0,
        2 ** 32 - 1,
      ),
    )
    .addOption(
      parsedOption('--costs <list>', 'credits per country, e.g. US=1,GB=2 (merged over the defaults)', costsFlag),
    )
    .addOption(
      parsedOption(
        '--countries <list>',
        'supported countries, e.g. US,GB,AU (default: US,GB,DE,IE,BE,NZ,ES,AU)',
        countryListFlag,
      ),
    )
    .addOption(
      integerOption('--transient-failures <n>', 'how many first attempts of a …991/…992 number fail', 0, 1000).default(
        2,
      ),
    )
    .addOption(
      integerOption(
        '--billing-errors <n>',
        'how many first attempts of a …995/…996 number answer billing_error (default: every one)',
        0,
        1000,
      ),
    )
    .addOption(
      parsedOption(
        '--upstream-failure-rate <r>',
        'probability 0..1 that any register attempt fails (uncharged 502/504)',
        rateFlag,
      ).default(0),
    )
    .option('--usage-failure', 'usage endpoints answer 500 (switch at run time with POST /_sandbox/usage-failure)')
    .option(
      '--detach',
      'start in the background, wait until it is ready, print export lines for DNC_BASE_URL, DNC_API_KEY and ' +
        'DNC_SANDBOX_PID, and return',
    )
    .addOption(new Option('--detached-folder <dir>').hideHelp())
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
  const emulator = await import('../sandbox/index.js');
  const options = await toOptions(ctx, flags, emulator.validateAccountSpecs);
  if (ctx.verbose) {
    // The request log already has the key redacted.
    options.onRequest = (r) => {
      const query = new URLSearchParams(r.query).toString();
      ctx.debug(
        `sandbox: ${r.method} ${r.path}${query ? `?${query}` : ''} → ${r.status}${r.account ? ` (${r.account})` : ''}`,
      );
    };
    options.onPush = (p) =>
      ctx.debug(
        `sandbox: push ${p.correlationId} attempt ${p.attempt}${p.duplicate ? ' (duplicate)' : ''} → ` +
          `${p.status ?? p.error} ${p.outcome}`,
      );
  }
  let sandbox;
  try {
    sandbox = await emulator.startSandbox(options);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw usageError('E_SANDBOX_LISTEN', `cannot listen on 127.0.0.1:${options.port}: ${code ?? String(err)}`, {
      hint:
        code === 'EADDRINUSE'
          ? 'another process uses that port: pick another with --port, or --port 0 for any free one'
          : undefined,
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
  ctx.info(
    `sandbox: introspection under ${sandbox.baseUrl}/_sandbox/ (requests, lookups, pushes, account); Ctrl-C stops`,
  );
  await new Promise<void>((resolve) => {
    const off = ctx.interrupts.on(() => {
      off();
      resolve();
    });
  });
  await sandbox.close();
  ctx.info('sandbox: stopped');
  // A background sandbox stopped by a signal leaves nothing behind; one that died of an error keeps its log.
  if (flags.detachedFolder) {
    const { removeDetachedFolder } = await import('./sandbox-detach.js');
    await removeDetachedFolder(flags.detachedFolder);
  }
  return ExitCode.OK;
}

// Decimal notation only (0.5, .5, 1e-3): Number() would also take hex (0x10), binary and octal.
const DECIMAL = /^\s*(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*$/i;

function rateFlag(raw: string, flag: string): number {
  const value = Number(raw);
  if (!DECIMAL.test(raw) || !Number.isFinite(value) || value < 0 || value > 1) {
    throw usageError('E_USAGE', `${flag} must be a number from 0 to 1, got '${raw}'`, {
      hint: 'write a decimal number such as 0.1',
    });
  }
  return value;
}

function timeScaleFlag(raw: string, flag: string): number {
  const scale = Number(raw);
  if (!DECIMAL.test(raw) || !Number.isFinite(scale) || scale <= 0) {
    throw usageError('E_USAGE', `${flag} must be a number above 0, got '${raw}'`, {
      hint: 'write a decimal number: e.g. --time-scale 0.001 makes 24 hours pass in 86.4 seconds',
    });
  }
  return scale;
}

function keyFlag(raw: string, flag: string): string {
  if (raw.length < 4 || /\s/.test(raw))
    throw usageError('E_USAGE', `${flag} must be at least 4 characters without spaces`);
  return raw;
}

/** The items of a comma-separated list; an empty list or an empty item (`US,,GB`, an unset variable) is refused. */
function listItems(raw: string, flag: string, example: string): string[] {
  const items = raw.split(',').map((p) => p.trim());
  if (raw.trim() === '') throw usageError('E_USAGE', `${flag} must not be empty`, { hint: `e.g. ${flag} ${example}` });
  if (items.some((p) => p === ''))
    throw usageError('E_USAGE', `${flag}: '${raw}' has an empty item`, { hint: `e.g. ${flag} ${example}` });
  return items;
}

function countryListFlag(raw: string, flag: string): string[] {
  const list = listItems(raw, flag, 'US,GB,AU').map((c) => c.toUpperCase());
  for (const c of list) {
    if (!/^[A-Z]{2}$/.test(c)) throw usageError('E_USAGE', `${flag}: '${c}' is not an ISO 3166-1 alpha-2 code`);
  }
  return list;
}

/** The most credits one sandbox lookup may cost (a lookup costs at least 1: the service meters every lookup). */
const MAX_COST = 1000;

function costsFlag(raw: string, flag: string): Record<string, number> {
  const costs: Record<string, number> = {};
  for (const part of listItems(raw, flag, 'US=1,GB=2,AU=3')) {
    const m = /^([A-Za-z]{2})\s*=\s*(\d+)$/.exec(part);
    if (!m) throw usageError('E_USAGE', `${flag}: '${part}' is not CC=N`, { hint: 'e.g. --costs US=1,GB=2,AU=3' });
    const country = m[1]!.toUpperCase();
    const cost = Number(m[2]);
    if (cost < 1 || cost > MAX_COST)
      throw usageError('E_USAGE', `${flag}: the cost of ${country} must be from 1 to ${MAX_COST} credits, got ${m[2]}`);
    if (Object.hasOwn(costs, country))
      throw usageError('E_USAGE', `${flag}: ${country} is given twice`, { hint: 'give each country one cost' });
    costs[country] = cost;
  }
  return costs;
}

async function toOptions(
  ctx: Context,
  f: SandboxFlags,
  validateAccountSpecs: (value: unknown) => AccountSpec[],
): Promise<SandboxOptions> {
  const o: SandboxOptions = {
    port: f.port,
    latencyMs: f.latencyMs,
    duplicatePushRate: f.duplicatePushRate,
    upstreamFailureRate: f.upstreamFailureRate,
    transientFailures: f.transientFailures,
    allowInsecureWebhooks: f.allowInsecureWebhooks === true,
    usageFailure: f.usageFailure === true,
    timeScale: f.timeScale,
    plan: f.plan,
  };
  if (f.key !== undefined) o.key = f.key;
  if (f.creditLimit !== undefined) o.creditLimit = f.creditLimit;
  if (f.seed !== undefined) o.seed = f.seed;
  if (f.billingErrors !== undefined) o.billingErrors = f.billingErrors;
  if (f.countries !== undefined) o.supportedCountries = f.countries;
  if (f.costs !== undefined) o.costs = f.costs;
  if (f.accounts !== undefined) o.accounts = await readAccounts(ctx, f.accounts, validateAccountSpecs);
  return o;
}

async function readAccounts(
  ctx: Context,
  file: string,
  validateAccountSpecs: (value: unknown) => AccountSpec[],
): Promise<AccountSpec[]> {
  const full = path.resolve(ctx.cwd, file);
  let text: string;
  try {
    text = await readFile(full, 'utf8');
  } catch (err) {
    throw usageError(
      'E_USAGE',
      `cannot read accounts file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  try {
    return validateAccountSpecs(JSON.parse(text));
  } catch (err) {
    throw usageError('E_USAGE', `accounts file ${file}: ${err instanceof Error ? err.message : String(err)}`, {
      hint: 'see docs/sandbox.md, "Accounts file", for the format (fixtures/sandbox/accounts.json is an example)',
    });
  }
}
