// `dnc sandbox`'s flags: each value's parser (refused while the command line is read), the flags as the emulator's
// options, and back as arguments for a detached sandbox.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { usageError } from '../errors.js';
import type { AccountSpec, SandboxOptions } from '../sandbox/index.js';

/** The flags as commander hands them over: every value parsed and checked while the command line is read. */
export interface SandboxFlags {
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
export function cliArguments(command: Command): string[] {
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

// Decimal notation only (0.5, .5, 1e-3): Number() would also take hex (0x10), binary and octal.
const DECIMAL = /^\s*(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*$/i;

export function rateFlag(raw: string, flag: string): number {
  const value = Number(raw);
  if (!DECIMAL.test(raw) || !Number.isFinite(value) || value < 0 || value > 1) {
    throw usageError('E_USAGE', `${flag} must be a number from 0 to 1, got '${raw}'`, {
      hint: 'write a decimal number such as 0.1',
    });
  }
  return value;
}

export function timeScaleFlag(raw: string, flag: string): number {
  const scale = Number(raw);
  if (!DECIMAL.test(raw) || !Number.isFinite(scale) || scale <= 0) {
    throw usageError('E_USAGE', `${flag} must be a number above 0, got '${raw}'`, {
      hint: 'write a decimal number: e.g. --time-scale 0.001 makes 24 hours pass in 86.4 seconds',
    });
  }
  return scale;
}

export function keyFlag(raw: string, flag: string): string {
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

export function countryListFlag(raw: string, flag: string): string[] {
  const list = listItems(raw, flag, 'US,GB,AU').map((c) => c.toUpperCase());
  for (const c of list) {
    if (!/^[A-Z]{2}$/.test(c)) throw usageError('E_USAGE', `${flag}: '${c}' is not an ISO 3166-1 alpha-2 code`);
  }
  return list;
}

/** The most credits one sandbox lookup may cost (a lookup costs at least 1: the service meters every lookup). */
const MAX_COST = 1000;

export function costsFlag(raw: string, flag: string): Record<string, number> {
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

export async function toOptions(
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
