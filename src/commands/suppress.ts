// `dnc suppress`: the internal do-not-call list (people who asked this company not to call), every change audited.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { parseCountryOption } from '../config.js';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
The internal do-not-call list is kept in one SQLite file: by default do-not-call.sqlite in the
state folder ($XDG_STATE_HOME/dnc, else ~/.local/state/dnc); --suppression-list PATH,
DNC_SUPPRESSION_LIST or "suppression_list" in the config file name another (a shared drive).
\`dnc check\` and \`dnc batch\` apply it before any lookup: a number on it is do_not_call
(dnc_list_source internal:<list name>) and is never sent.

Every change is appended to the list's audit log (when, what, who as user@host, reason,
source); removing a number adds an entry, nothing is ever deleted. \`dnc suppress log\` shows it.
The newest head of the log is anchored in the state folder: a list whose last entries were
cut, or another list put in its place, is refused by every command (E_LIST_ALTERED) until
it is put back, or \`dnc suppress restore FILE --reason TEXT\` records that it was restored
on purpose.

Examples:
  dnc suppress add +12025550143 --reason "asked on call 2026-11-20" --source "agent 17"
  dnc suppress import opt-outs.csv --source "web form"
  dnc suppress export -o internal-dnc.csv
  dnc suppress count
  dnc suppress restore backups/do-not-call.sqlite --reason "disk replaced; backup of 2026-11-20"`;

const SUPPRESSION_HEADER = ['phone', 'country', 'added_at', 'who', 'reason', 'source'];

export function registerSuppress(program: Command, host: CommandHost): void {
  const suppress = program
    .command('suppress')
    .description('the internal do-not-call list: add, remove, import, export, list, count (audited)')
    .addHelpText('after', HELP);
  const listOption = (c: Command) =>
    c.option('--suppression-list <path>', 'the list file (env DNC_SUPPRESSION_LIST; default: the state folder)');
  const why = (c: Command) =>
    c
      .option('--reason <text>', 'why (kept in the audit log)')
      .option('--source <text>', 'where the request came from (kept in the audit log)');

  const add = why(
    listOption(suppress.command('add').description('put numbers on the internal list').argument('<number...>')),
  );
  add.option('--country <cc>', 'region for numbers in national format');
  host.action(add, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; reason?: string; source?: string; country?: string };
    const { numbersFromArgs } = await import('../compliance/list-files.js');
    const numbers = await numbersFromArgs(cmd.args, await parseCountryOption(o.country));
    return change(ctx, o, (store, actor) => store.suppress(numbers, actor, ctx.now()), 'added');
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
    const o = cmd.opts() as { suppressionList?: string; reason?: string; source?: string; country?: string };
    const { numbersFromArgs } = await import('../compliance/list-files.js');
    const numbers = await numbersFromArgs(cmd.args, await parseCountryOption(o.country));
    return change(
      ctx,
      o,
      (store, actor) =>
        store.unsuppress(
          numbers.map((n) => n.e164),
          actor,
          ctx.now(),
        ),
      'removed',
    );
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
    const o = cmd.opts() as {
      suppressionList?: string;
      reason?: string;
      source?: string;
      country?: string;
      column?: string;
    };
    const { readImportFile } = await import('../compliance/list-files.js');
    const file = path.resolve(ctx.cwd, cmd.args[0]!);
    const rows = await readImportFile(file, { column: o.column, country: await parseCountryOption(o.country) });
    const source = o.source ?? `import ${path.basename(file)}`;
    return change(
      ctx,
      { ...o, source },
      (store, actor) =>
        store.suppress(
          rows.map((r) => r.number),
          actor,
          ctx.now(),
        ),
      'added',
    );
  });

  const exp = listOption(
    suppress.command('export').description('write the list as CSV (phone, country, added_at, who, reason, source)'),
  );
  exp.option('-o, --output <file>', 'write to FILE (mode 0600) instead of stdout');
  host.action(exp, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string; output?: string };
    const { csvText } = await import('../compliance/list-files.js');
    const rows = await withList(ctx, o, async (s) =>
      (await s.suppressions()).map((x) => [x.e164, x.country, x.addedAt, x.who, x.reason, x.source]),
    );
    await emit(ctx, o.output, await csvText(SUPPRESSION_HEADER, rows));
    return ExitCode.OK;
  });

  const list = listOption(
    suppress.command('list').description('show the numbers on the list (--json: one object per number)'),
  );
  host.action(list, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string };
    const entries = await withList(ctx, o, (s) => s.suppressions());
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
    const { renderTable } = await import('../render/table.js');
    ctx.io.stdout.write(
      renderTable(
        {
          head: SUPPRESSION_HEADER,
          rows: entries.map((x) => [x.e164, x.country, x.addedAt, x.who, x.reason, x.source]),
        },
        { tty: ctx.io.stdoutIsTTY, color: ctx.io.stdoutColor, columns: ctx.io.columns },
      ),
    );
    return ExitCode.OK;
  });

  const count = listOption(suppress.command('count').description('how many numbers are on the list'));
  host.action(count, async (ctx, cmd) => {
    const o = cmd.opts() as { suppressionList?: string };
    const c = await withList(ctx, o, async (s) => ({ ...(await s.counts()), name: s.name, path: s.path }));
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
    const { restoreList } = await import('../compliance/list-restore.js');
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
    const { numberFrom, csvText } = await import('../compliance/list-files.js');
    const only = cmd.args[0]
      ? (await numberFrom(cmd.args[0], '', await parseCountryOption(o.country))).e164
      : undefined;
    const r = await withList(
      ctx,
      o,
      async (s) => ({
        entries: await s.audit(only),
        broken: await s.brokenAuditEntry(),
        mismatch: await s.stateMismatch(),
      }),
      { checked: false },
    );
    // A log whose last entries were cut still chains: only the anchor in the state folder shows it.
    const { checkListAnchor, complianceSettings, openList } = await import('../compliance/settings.js');
    const settings = await complianceSettings(ctx, o);
    const cut = await openList(ctx, settings, false).then(async (store) => {
      try {
        // A team list's head is anchored in the store too: its log must still hold it.
        const inStore = store?.shared ? await store.integrityProblem([]) : null;
        if (inStore) return inStore;
        await checkListAnchor(ctx, store, settings.listPath);
        return null;
      } catch (err) {
        return (err as Error).message;
      } finally {
        await store?.close();
      }
    });
    if (ctx.json) for (const e of r.entries) writeLine(ctx.io.stdout, JSON.stringify(e));
    else
      ctx.io.stdout.write(
        await csvText(
          ['id', 'at', 'action', 'phone', 'who', 'reason', 'source', 'basis', 'until', 'evidence'],
          r.entries.map((e) => [
            String(e.id),
            e.at,
            e.action,
            e.e164,
            e.who,
            e.reason,
            e.source,
            e.basis,
            e.until,
            e.evidence,
          ]),
        ),
      );
    if (r.broken !== null) {
      ctx.warn(`dnc: the audit log was altered outside dnc: entry ${r.broken} does not match the hash chain`);
      return ExitCode.INPUT;
    }
    if (r.mismatch !== null) {
      ctx.warn(`dnc: the list was altered outside dnc: ${r.mismatch}`);
      return ExitCode.INPUT;
    }
    if (cut !== null) {
      ctx.warn(`dnc: ${cut.replace(/; nothing was sent$/, '')}`);
      return ExitCode.INPUT;
    }
    return ExitCode.OK;
  });
}

type Store = import('../stores/interfaces.js').SuppressionList;
type Actor = import('../stores/suppression-types.js').Actor;
type Change = import('../stores/suppression-types.js').ChangeResult;
type Ctx = import('../context.js').Context;

/** Opens the list for a change, applies it as user@host, and says what changed. Shared with `dnc exempt`. */
export async function change(
  ctx: Ctx,
  o: { suppressionList?: string; reason?: string; source?: string },
  apply: (store: Store, actor: Actor) => Promise<Change>,
  verb: string,
): Promise<number> {
  const { openListForChange, anchorListHead } = await import('../compliance/settings.js');
  const { store, operator } = await openListForChange(ctx, o);
  try {
    const r = await apply(store, { who: operator, reason: o.reason ?? null, source: o.source ?? null });
    // The new head, anchored in the state folder: a later cut of these entries is found by every command.
    await anchorListHead(ctx, store);
    if (ctx.json)
      writeLine(
        ctx.io.stdout,
        JSON.stringify({ list: store.name, path: store.path, changed: r.changed, unchanged: r.unchanged }),
      );
    else
      ctx.info(
        `${formatInteger(r.changed)} number(s) ` +
          `${verb}${r.unchanged ? `, ${formatInteger(r.unchanged)} already so` : ''} (list ${store.name}: ` +
          `${store.path})`,
      );
    return ExitCode.OK;
  } finally {
    await store.close();
  }
}

/**
 * Reads the list (an empty one when it was never written: nothing is created by reading). A list altered outside
 * dnc is refused (E_LIST_ALTERED): its entries would be shown or exported as if the audit log vouched for them;
 * `log` reads it all the same (`checked: false`), since it is where the alteration is reported.
 */
export async function withList<T>(
  ctx: Ctx,
  o: { suppressionList?: string },
  read: (store: Store) => Promise<T>,
  options: { checked?: boolean } = {},
): Promise<T> {
  const { checkListAnchor, complianceSettings, listAlteredError, openListToRead } =
    await import('../compliance/settings.js');
  const s = await complianceSettings(ctx, o);
  const { list: store, opened } = await openListToRead(ctx, s);
  try {
    const problem = options.checked === false ? null : await store.integrityProblem();
    if (problem) throw listAlteredError(s.listPath, problem, 'its entries are not shown or exported');
    if (options.checked !== false)
      await checkListAnchor(ctx, opened, s.listPath, 'its entries are not shown or exported');
    return await read(store);
  } finally {
    await store.close();
  }
}

/** Writes CSV to a private file (atomically) or to stdout. */
export async function emit(ctx: Ctx, output: string | undefined, text: string): Promise<void> {
  if (!output) {
    ctx.io.stdout.write(text);
    return;
  }
  const { tempPathFor } = await import('../atomic-file.js');
  const { rename } = await import('node:fs/promises');
  const target = path.resolve(ctx.cwd, output);
  const tmp = tempPathFor(target);
  await writeFile(tmp, text, { flag: 'wx', mode: 0o600 });
  await rename(tmp, target);
  ctx.info(`wrote ${target}`);
}
