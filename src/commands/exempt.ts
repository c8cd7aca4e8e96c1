// `dnc exempt`: numbers that may be called despite a register (consent, an existing business relationship), each with
// an expiry.
import { Option, type Command } from 'commander';
import type { Context } from '../context.js';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import type { ExemptEvent, ExemptFlags } from '../lists/exempt.js';
import { changed, exemptionTable, exported } from '../render/lists.js';
import { LIST_FILE_WHERE } from '../cli-options.js';
import type { CommandHost } from './host.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
An exemption lets a number on a national register be called: written consent (consent), or an
existing business relationship from a purchase (ebr-purchase) or an inquiry (ebr-inquiry),
until a date (YYYY-MM-DD: through that day, UTC). \`dnc check\` and \`dnc batch\` still look the
number up (the register verdict is recorded) and then mark it callable, naming the basis and
expiry in the dnc_exemption column. The internal do-not-call list always wins over an
exemption: an opt-out revokes consent. Expired exemptions are ignored and reported.

Exemptions live in the same file as the internal list (see \`dnc suppress --help\`) and share
its audit log; with a team store (--store, DNC_STORE) they are the team's, in its PostgreSQL
database beside its list.

Import files are CSV with a header: a phone column, "basis", "until" and optionally "evidence".

Examples:
  dnc exempt add +12025550143 --basis consent --until 2027-05-31 --evidence "signed form 4411"
  dnc exempt import consents.csv --source crm
  dnc exempt list --json`;

/**
 * --basis, with its values known to completion and the man page (argChoices). parseBasis checks the value,
 * case-insensitively (commander's choices would refuse CONSENT); the store's list is not imported here, so
 * that registering the command stays light; a test holds the two lists equal.
 */
export const BASES = ['consent', 'ebr-purchase', 'ebr-inquiry'] as const;
function basisOption(): Option {
  const o = new Option('--basis <basis>', 'why it may be called').makeOptionMandatory();
  o.argChoices = [...BASES];
  return o;
}

export function registerExempt(program: Command, host: CommandHost): void {
  const exempt = program
    .command('exempt')
    .description('exemptions: numbers that may be called despite a register, each with a basis and expiry')
    .addHelpText('after', HELP);
  const common = (c: Command) =>
    c
      .option('--suppression-list <path>', `the list file (${LIST_FILE_WHERE})`)
      .option('--reason <text>', 'why (kept in the audit log)')
      .option('--source <text>', 'where it came from (kept in the audit log)')
      .option('--country <cc>', 'region for numbers in national format');

  const add = common(exempt.command('add').description('exempt a number until a date').argument('<number>'))
    .addOption(basisOption())
    .requiredOption('--until <date>', 'the last day it holds (YYYY-MM-DD, UTC) or an ISO 8601 date-time')
    .option('--evidence <text>', 'where the proof is (form id, order number…)');
  host.action(add, async (ctx, cmd) => {
    const o = cmd.opts() as ExemptFlags & { basis: string; until: string; evidence?: string };
    const { addExemption } = await import('../lists/exempt.js');
    return changed(ctx, await addExemption(ctx, o, cmd.args, (e) => said(ctx, e)), 'exempted');
  });

  const remove = common(exempt.command('remove').description('withdraw exemptions (audited)').argument('<number...>'));
  host.action(remove, async (ctx, cmd) => {
    const o = cmd.opts() as ExemptFlags;
    const { removeExemptions } = await import('../lists/exempt.js');
    return changed(ctx, await removeExemptions(ctx, o, cmd.args), 'no longer exempt');
  });

  const imp = common(
    exempt
      .command('import')
      .description('add exemptions from a CSV file (phone, basis, until[, evidence])')
      .argument('<file>'),
  ).option('--column <name|index>', 'the phone column');
  host.action(imp, async (ctx, cmd) => {
    const o = cmd.opts() as ExemptFlags & { column?: string };
    const { importExemptions } = await import('../lists/exempt.js');
    return changed(ctx, await importExemptions(ctx, o, cmd.args[0]!, (e) => said(ctx, e)), 'exempted');
  });

  const exp = exempt
    .command('export')
    .description('write the exemptions as CSV')
    .option('--suppression-list <path>', `the list file (${LIST_FILE_WHERE})`)
    .option('-o, --output <file>', 'write to FILE (mode 0600) instead of stdout');
  host.action(exp, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; output?: string };
    const { exportExemptions } = await import('../lists/exempt.js');
    exported(ctx, await exportExemptions(ctx, o));
    return ExitCode.OK;
  });

  const list = exempt
    .command('list')
    .description('show the exemptions; expired ones are marked (--json: one object each)')
    .option('--suppression-list <path>', `the list file (${LIST_FILE_WHERE})`);
  host.action(list, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string };
    const { listExemptions } = await import('../lists/exempt.js');
    const entries = await listExemptions(ctx, o);
    if (ctx.json) {
      for (const x of entries) {
        writeLine(
          ctx.io.stdout,
          JSON.stringify({
            phone: x.e164,
            country: x.country,
            basis: x.basis,
            until: x.until,
            evidence: x.evidence,
            added_at: x.addedAt,
            who: x.who,
            valid: x.valid,
            overridden_by_internal_list: x.suppressed,
          }),
        );
      }
    } else {
      ctx.io.stdout.write(
        await exemptionTable(entries, { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns }),
      );
    }
    const expired = entries.filter((x) => !x.valid).length;
    if (expired) ctx.warn(`dnc: ${formatInteger(expired)} exemption(s) have expired and are ignored`);
    return ExitCode.OK;
  });
}

function said(ctx: Context, e: ExemptEvent): void {
  if (e.type === 'on-internal-list')
    ctx.warn(
      `dnc: warning: ${e.e164} is on the internal do-not-call list, which wins over any exemption: it ` +
        `stays do_not_call until removed from the list`,
    );
  else
    ctx.warn(
      `dnc: warning: ${e.count} imported exemption(s) have already expired: they are recorded but never applied`,
    );
}
