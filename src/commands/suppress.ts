// `dnc suppress`: the internal do-not-call list (people who asked this company not to call), every change audited.
import type { Command } from 'commander';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import type { SuppressFlags } from '../lists/suppress.js';
import { changed, exported, suppressionTable } from '../render/lists.js';
import { LIST_FILE_WHERE } from '../cli-options.js';
import type { CommandHost } from './host.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
The internal do-not-call list is kept in one SQLite file: by default do-not-call.sqlite in the
state folder ($XDG_STATE_HOME/dnc, else ~/.local/state/dnc); --suppression-list PATH,
DNC_SUPPRESSION_LIST or "suppression_list" in the config file name another (a shared drive).
With a team store (--store postgresql://…, DNC_STORE or "store" in the config file) the list is
the team's, in that PostgreSQL database, one for every machine that names it: these commands
change it there, and a list file named as well is refused (\`dnc store import\` moves this
machine's list in; docs/team.md).
\`dnc check\` and \`dnc batch\` apply it before any lookup: a number on it is do_not_call
(dnc_list_source internal:<list name>) and is never sent.

Every change is appended to the list's audit log (when, what, who as user@host, reason,
source); removing a number adds an entry, nothing is ever deleted. \`dnc suppress log\` shows it.
The newest head of the log is anchored in the state folder: a list whose last entries were
cut, or another list put in its place, is refused by every command (E_LIST_ALTERED) until
it is put back, or \`dnc suppress restore FILE --reason TEXT\` records that it was restored
on purpose (a list file: a team store is restored from the database's own backups).

Examples:
  dnc suppress add +12025550143 --reason "asked on call 2026-11-20" --source "agent 17"
  dnc suppress import opt-outs.csv --source "web form"
  dnc suppress export -o internal-dnc.csv
  dnc suppress count
  dnc suppress restore backups/do-not-call.sqlite --reason "disk replaced; backup of 2026-11-20"`;

export function registerSuppress(program: Command, host: CommandHost): void {
  const suppress = program
    .command('suppress')
    .description('the internal do-not-call list: add, remove, import, export, list, count (audited)')
    .addHelpText('after', HELP);
  const listOption = (c: Command) => c.option('--suppression-list <path>', `the list file (${LIST_FILE_WHERE})`);
  const why = (c: Command) =>
    c
      .option('--reason <text>', 'why (kept in the audit log)')
      .option('--source <text>', 'where the request came from (kept in the audit log)');

  const add = why(
    listOption(suppress.command('add').description('put numbers on the internal list').argument('<number...>')),
  );
  add.option('--country <cc>', 'region for numbers in national format');
  host.action(add, async (ctx, cmd) => {
    const o = cmd.opts() as SuppressFlags;
    const { addSuppressions } = await import('../lists/suppress.js');
    return changed(ctx, await addSuppressions(ctx, o, cmd.args), 'added');
  });

  const remove = why(
    listOption(
      suppress
        .command('remove')
        .description('take numbers off the internal list (audited; the entry that added them stays)')
        .argument('<number...>'),
    ),
  );
  remove.option('--country <cc>', 'region for numbers in national format');
  host.action(remove, async (ctx, cmd) => {
    const o = cmd.opts() as SuppressFlags;
    const { removeSuppressions } = await import('../lists/suppress.js');
    return changed(ctx, await removeSuppressions(ctx, o, cmd.args), 'removed');
  });

  const imp = why(
    listOption(
      suppress
        .command('import')
        .description('add every number of a CSV file (header line; phone column detected or --column)')
        .argument('<file>'),
    ),
  );
  imp
    .option('--column <name|index>', 'the phone column')
    .option('--country <cc>', 'region for numbers in national format');
  host.action(imp, async (ctx, cmd) => {
    const o = cmd.opts() as SuppressFlags & { column?: string };
    const { importSuppressions } = await import('../lists/suppress.js');
    return changed(ctx, await importSuppressions(ctx, o, cmd.args[0]!), 'added');
  });

  registerReading(suppress, host, listOption);
  registerAudit(suppress, host, listOption);
}

/** export, list, count: the list read. */
function registerReading(suppress: Command, host: CommandHost, listOption: (c: Command) => Command): void {
  const exp = listOption(
    suppress.command('export').description('write the list as CSV (phone, country, added_at, who, reason, source)'),
  );
  exp.option('-o, --output <file>', 'write to FILE (mode 0600) instead of stdout');
  host.action(exp, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; output?: string };
    const { exportSuppressions } = await import('../lists/suppress.js');
    exported(ctx, await exportSuppressions(ctx, o));
    return ExitCode.OK;
  });

  const list = listOption(
    suppress.command('list').description('show the numbers on the list (--json: one object per number)'),
  );
  host.action(list, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string };
    const { listSuppressions } = await import('../lists/suppress.js');
    const entries = await listSuppressions(ctx, o);
    if (ctx.json) {
      for (const x of entries)
        writeLine(
          ctx.io.stdout,
          JSON.stringify({
            phone: x.e164,
            country: x.country,
            added_at: x.addedAt,
            who: x.who,
            reason: x.reason,
            source: x.source,
          }),
        );
      return ExitCode.OK;
    }
    ctx.io.stdout.write(
      await suppressionTable(entries, { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns }),
    );
    return ExitCode.OK;
  });

  const count = listOption(suppress.command('count').description('how many numbers are on the list'));
  host.action(count, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string };
    const { countList } = await import('../lists/suppress.js');
    const c = await countList(ctx, o);
    if (ctx.json)
      writeLine(
        ctx.io.stdout,
        JSON.stringify({
          list: c.name,
          path: c.path,
          suppressions: c.suppressions,
          exemptions: c.exemptions,
          audit_entries: c.audit,
        }),
      );
    else writeLine(ctx.io.stdout, String(c.suppressions));
    return ExitCode.OK;
  });
}

/** restore, log: the list's audit. */
function registerAudit(suppress: Command, host: CommandHost, listOption: (c: Command) => Command): void {
  const restore = listOption(
    suppress
      .command('restore')
      .description(
        'put the list back from a backup on purpose, or accept the list in place as it stands (recorded in its ' +
          'audit log)',
      )
      .argument('<file>', 'the backup to put back (the list itself: accept it as it is now)'),
  );
  restore.requiredOption('--reason <text>', 'why (kept in the audit log)');
  host.action(restore, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; reason: string };
    const { restoreList } = await import('../lists/suppress.js');
    const r = await restoreList(ctx, o, cmd.args[0]!, o.reason);
    if (ctx.json)
      writeLine(
        ctx.io.stdout,
        JSON.stringify({
          list: r.list,
          from: r.from,
          replaced_kept_at: r.replacedKeptAt,
          previous_head: r.previousHead,
          audit_entries: r.entries,
        }),
      );
    else {
      ctx.info(
        `restored ${r.list} from ${r.from} (${formatInteger(r.entries)} audit entries, the restore recorded as ` +
          `the last)`,
      );
      if (r.replacedKeptAt) ctx.info(`the list it replaced is kept at ${r.replacedKeptAt}`);
    }
    return ExitCode.OK;
  });

  const log = listOption(
    suppress
      .command('log')
      .description("the list's audit log (suppressions and exemptions), oldest first")
      .argument('[number]'),
  );
  log.option('--country <cc>', 'region for a number in national format');
  host.action(log, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; country?: string };
    const { auditLog } = await import('../lists/suppress.js');
    const r = await auditLog(ctx, o, cmd.args[0], ctx.json ? 'json' : 'csv');
    if (ctx.json) for (const e of r.entries) writeLine(ctx.io.stdout, JSON.stringify(e));
    else ctx.io.stdout.write(r.csv!);
    if (r.broken !== null) {
      ctx.warn(`dnc: the audit log was altered outside dnc: entry ${r.broken} does not match the hash chain`);
      return ExitCode.INPUT;
    }
    if (r.mismatch !== null) {
      ctx.warn(`dnc: the list was altered outside dnc: ${r.mismatch}`);
      return ExitCode.INPUT;
    }
    if (r.cut !== null) {
      ctx.warn(`dnc: ${r.cut.replace(/; nothing was sent$/, '')}`);
      return ExitCode.INPUT;
    }
    return ExitCode.OK;
  });
}
