// `dnc sandbox`: runs the local service emulator on 127.0.0.1 until SIGINT/SIGTERM, printing its base URL and key
// first.
import { Option, type Command } from 'commander';
import { integerOption, parsedOption } from '../cli-options.js';
import { rawStream } from '../redact.js';
import type { Context } from '../context.js';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import {
  cliArguments,
  costsFlag,
  countryListFlag,
  keyFlag,
  rateFlag,
  timeScaleFlag,
  toOptions,
  type SandboxFlags,
} from './sandbox-flags.js';

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
