// `dnc exempt`: numbers that may be called despite a register (consent, an existing business relationship), each with
// an expiry.
import path from 'node:path';
import { Option, type Command } from 'commander';
import { parseCountryOption } from '../config.js';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import { change, emit, withList } from './suppress.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
An exemption lets a number on a national register be called: written consent (consent), or an
existing business relationship from a purchase (ebr-purchase) or an inquiry (ebr-inquiry),
until a date (YYYY-MM-DD: through that day, UTC). \`dnc check\` and \`dnc batch\` still look the
number up (the register verdict is recorded) and then mark it callable, naming the basis and
expiry in the dnc_exemption column. The internal do-not-call list always wins over an
exemption: an opt-out revokes consent. Expired exemptions are ignored and reported.

Exemptions live in the same file as the internal list (see \`dnc suppress --help\`) and share
its audit log.

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

const HEADER = ['phone', 'country', 'basis', 'until', 'evidence', 'added_at', 'who'];

export function registerExempt(program: Command, host: CommandHost): void {
  const exempt = program
    .command('exempt')
    .description('exemptions: numbers that may be called despite a register, each with a basis and expiry')
    .addHelpText('after', HELP);
  const common = (c: Command) =>
    c
      .option('--suppression-list <path>', 'the list file (env DNC_SUPPRESSION_LIST; default: the state folder)')
      .option('--reason <text>', 'why (kept in the audit log)')
      .option('--source <text>', 'where it came from (kept in the audit log)')
      .option('--country <cc>', 'region for numbers in national format');

  const add = common(exempt.command('add').description('exempt a number until a date').argument('<number>'))
    .addOption(basisOption())
    .requiredOption('--until <date>', 'the last day it holds (YYYY-MM-DD, UTC) or an ISO 8601 date-time')
    .option('--evidence <text>', 'where the proof is (form id, order number…)');
  host.action(add, async (ctx, cmd) => {
    const o = cmd.opts() as {
      suppressionList?: string;
      reason?: string;
      source?: string;
      country?: string;
      basis: string;
      until: string;
      evidence?: string;
    };
    const f = await import('../compliance/list-files.js');
    const basis = f.parseBasis(o.basis);
    const until = f.parseUntil(o.until);
    if (Date.parse(until) < ctx.now().getTime())
      throw usageError('E_USAGE', `--until ${o.until} is in the past: the exemption would never hold`, {
        hint: 'give the date the consent or relationship ends',
      });
    const [n] = await f.numbersFromArgs(cmd.args, await parseCountryOption(o.country));
    return change(
      ctx,
      o,
      async (store, actor) => {
        // Recorded all the same (consent may be given again later), but the user should know it changes nothing now.
        if (await store.suppression(n!.e164))
          ctx.warn(
            `dnc: warning: ${n!.e164} is on the internal do-not-call list, which wins over any exemption: it ` +
              `stays do_not_call until removed from the list`,
          );
        return store.exempt([{ ...n!, basis, until, evidence: o.evidence ?? null }], actor, ctx.now());
      },
      'exempted',
    );
  });

  const remove = common(exempt.command('remove').description('withdraw exemptions (audited)').argument('<number...>'));
  host.action(remove, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; reason?: string; source?: string; country?: string };
    const { numbersFromArgs } = await import('../compliance/list-files.js');
    const numbers = await numbersFromArgs(cmd.args, await parseCountryOption(o.country));
    return change(
      ctx,
      o,
      (store, actor) =>
        store.unexempt(
          numbers.map((x) => x.e164),
          actor,
          ctx.now(),
        ),
      'no longer exempt',
    );
  });

  const imp = common(
    exempt
      .command('import')
      .description('add exemptions from a CSV file (phone, basis, until[, evidence])')
      .argument('<file>'),
  ).option('--column <name|index>', 'the phone column');
  host.action(imp, async (ctx, cmd) => {
    const o = cmd.opts() as {
      suppressionList?: string;
      reason?: string;
      source?: string;
      country?: string;
      column?: string;
    };
    const f = await import('../compliance/list-files.js');
    const file = path.resolve(ctx.cwd, cmd.args[0]!);
    const rows = await f.readImportFile(file, {
      column: o.column,
      country: await parseCountryOption(o.country),
      required: ['basis', 'until'],
      check: (cells, where) => {
        f.parseBasis(cells.basis ?? '', `${where}basis `);
        f.parseUntil(cells.until ?? '', `${where}until `);
      },
    });
    const items = rows.map((r) => ({
      ...r.number,
      basis: f.parseBasis(r.cells.basis!),
      until: f.parseUntil(r.cells.until!),
      evidence: r.cells.evidence || null,
    }));
    const expired = items.filter((x) => Date.parse(x.until) < ctx.now().getTime()).length;
    if (expired)
      ctx.warn(
        `dnc: warning: ${expired} imported exemption(s) have already expired: they are recorded but never applied`,
      );
    return change(
      ctx,
      { ...o, source: o.source ?? `import ${path.basename(file)}` },
      (store, actor) => store.exempt(items, actor, ctx.now()),
      'exempted',
    );
  });

  const exp = exempt
    .command('export')
    .description('write the exemptions as CSV')
    .option('--suppression-list <path>', 'the list file')
    .option('-o, --output <file>', 'write to FILE (mode 0600) instead of stdout');
  host.action(exp, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; output?: string };
    const { csvText } = await import('../compliance/list-files.js');
    const rows = await withList(ctx, o, async (s) =>
      (await s.exemptions()).map((x) => [x.e164, x.country, x.basis, x.until, x.evidence, x.addedAt, x.who]),
    );
    await emit(ctx, o.output, await csvText(HEADER, rows));
    return ExitCode.OK;
  });

  const list = exempt
    .command('list')
    .description('show the exemptions; expired ones are marked (--json: one object each)')
    .option('--suppression-list <path>', 'the list file');
  host.action(list, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string };
    const { exemptionHolds } = await import('../stores/suppression-types.js');
    const now = ctx.now();
    const entries = await withList(ctx, o, async (s) => {
      const onList = new Set((await s.suppressions()).map((x) => x.e164));
      return (await s.exemptions()).map((x) => ({
        ...x,
        valid: exemptionHolds(x, now),
        suppressed: onList.has(x.e164),
      }));
    });
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
      const { renderTable } = await import('../render/table.js');
      const state = (x: (typeof entries)[number]) =>
        x.suppressed ? 'overridden (on the internal list)' : x.valid ? 'valid' : 'EXPIRED';
      ctx.io.stdout.write(
        renderTable(
          {
            head: ['phone', 'basis', 'until', 'state', 'evidence', 'who'],
            rows: entries.map((x) => [x.e164, x.basis, x.until, state(x), x.evidence, x.who]),
          },
          { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
        ),
      );
    }
    const expired = entries.filter((x) => !x.valid).length;
    if (expired) ctx.warn(`dnc: ${formatInteger(expired)} exemption(s) have expired and are ignored`);
    return ExitCode.OK;
  });
}
