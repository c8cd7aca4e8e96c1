// `dnc store`: where dnc keeps what outlives a run (the local files, or a team's PostgreSQL store), its schema, and
// moving a machine's internal list into the team's.
import type { Command } from 'commander';
import { ExitCode, usageError } from '../errors.js';
import { writeLine } from '../io.js';
import type { CommandHost } from './host.js';
import type { Context } from '../context.js';
import type { StoreStatus } from '../stores/owner.js';
import { formatInteger } from '../text/numbers.js';

const HELP = `
Without --store (or DNC_STORE, or "store" in the config file) dnc keeps the results cache,
the internal list with its exemptions and audit log, and the history in files of the state
and cache folders: one person's. With a postgres:// URL they are a team's, shared by every
machine that names the same store (docs/team.md): one opt-out list, one results cache, and
numbers claimed before they are sent, so that no two machines pay for one lookup.

The schema is migrated by the first dnc that opens the store (under an advisory lock); a DBA
who keeps dnc's role from changing the schema runs \`dnc store migrate\` with an owner role.

Examples:
  dnc store status --store postgresql://dnc@db.example.com/dnc
  DNC_STORE=postgresql://dnc_owner@db.example.com/dnc dnc store migrate
  dnc store import --store postgresql://dnc@db.example.com/dnc       (this machine's list)`;

export function registerStore(program: Command, host: CommandHost): void {
  const store = program
    .command('store')
    .description("the store: local files or a team's PostgreSQL (status, migrate, import)")
    .addHelpText('after', HELP);

  host.action(
    store.command('status').description('where the store is, its schema version and what it holds'),
    async (ctx) => {
      const stores = await ctx.stores();
      const s = await stores.status();
      if (ctx.json) writeLine(ctx.io.stdout, JSON.stringify(s));
      else {
        writeLine(ctx.io.stdout, `store: ${s.kind === 'local' ? `local files ${s.where}` : teamAddress(s)}`);
        if (s.schema_version !== null)
          writeLine(ctx.io.stdout, `schema: version ${s.schema_version} (this dnc: ${s.latest_version})`);
        for (const [table, n] of Object.entries(s.counts)) writeLine(ctx.io.stdout, `${table}: ${formatInteger(n)}`);
      }
      return ExitCode.OK;
    },
  );

  host.action(
    store.command('migrate').description("bring a team store's schema to this dnc's version"),
    async (ctx) => {
      const stores = await ctx.stores();
      const applied = await stores.migrate();
      if (applied === null) throw noTeamStore('migrate');
      const s = await stores.status();
      if (ctx.json)
        writeLine(ctx.io.stdout, JSON.stringify({ where: s.where, applied, schema_version: s.schema_version }));
      else
        ctx.info(
          applied.length > 0
            ? `migrated ${s.where} to schema version ${s.schema_version} (applied: ${applied.join(', ')})`
            : `${s.where} is at schema version ${s.schema_version} already: nothing to do`,
        );
      return ExitCode.OK;
    },
  );

  const imp = store
    .command('import')
    .description("move this machine's internal list and exemptions into the team store, audit log and all")
    .option('--suppression-list <path>', 'the local list file (default: the state folder)')
    .option('--merge', 'add its entries to a team list that has some already (none is taken off)');
  host.action(imp, async (ctx, cmd) => {
    const o = cmd.opts<{ suppressionList?: string; merge?: boolean }>();
    return importList(ctx, o.suppressionList, o.merge === true);
  });
}

/** A team store as status shows it: where it connects, from the URL and the PG* variables alike; no password. */
function teamAddress(s: StoreStatus): string {
  return `team (PostgreSQL): host ${s.host}, port ${s.port}, database ${s.database}, user ${s.user}`;
}

function noTeamStore(what: string) {
  return usageError('E_STORE_INVALID', `store ${what} needs a team store, and none is named`, {
    hint: 'give --store postgresql://…, DNC_STORE, or "store" in the config file (docs/team.md)',
  });
}

async function importList(ctx: Context, flag: string | undefined, merge: boolean): Promise<number> {
  const stores = await ctx.stores();
  // The list is moved into a store that holds one: the team's.
  if (stores.teamListWhere === null) throw noTeamStore('import');
  const { importListIntoTeam } = await import('../compliance/team-import.js');
  const r = await importListIntoTeam(ctx, stores, flag, merge);
  if (ctx.json)
    writeLine(
      ctx.io.stdout,
      JSON.stringify({
        from: r.from,
        into: r.into,
        merged: r.merged,
        audit_entries_added: r.entries,
        list: r.list,
      }),
    );
  else if (r.merged && r.entries === 0)
    // A merge that changed nothing says so: "imported 3 number(s)" read as if they had been added.
    ctx.info(
      `nothing to import: the ${formatInteger(r.numbers)} number(s) and ${formatInteger(r.exemptions)} ` +
        `exemption(s) of ${r.from} are in ${r.into} already (no audit entry added)`,
    );
  else
    ctx.info(
      `imported ${formatInteger(r.numbers)} number(s) and ` +
        `${formatInteger(r.exemptions)} exemption(s) from ${r.from} into ${r.into} ` +
        `(${formatInteger(r.entries)} audit entries ` +
        `${r.merged ? 'added' : 'copied, hashes and all'}; head ${r.list.audit_head?.slice(0, 12) ?? '(none)'}…)`,
    );
  return ExitCode.OK;
}
