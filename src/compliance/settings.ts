// What the compliance commands share: where the list is, who is acting, who the scrub is for, the validity windows.
import { existsSync } from 'node:fs';
import os from 'node:os';
import { loadConfigFile, type GlobalFlags } from '../config.js';
import { inputError, usageError } from '../errors.js';
import { Anchors, anchorsPath } from '../stores/anchors.js';
import type { SuppressionList } from '../stores/interfaces.js';
import { isTeamStoreUrl, type Stores } from '../stores/owner.js';
import { keptFolder, missingHome, stateDir } from '../paths.js';
import { SuppressionStore } from '../stores/suppression-store.js';
import { resolveListPath } from '../stores/suppression-types.js';
import { validityRules, type ValidityRules } from './validity.js';

export interface ComplianceFlags {
  suppressionList?: string | undefined;
  seller?: string | undefined;
  san?: string | undefined;
  campaign?: string | undefined;
}

/** Who scrubbed for whom (recorded in the manifest and the report). */
export interface ScrubParties {
  seller: string | null;
  san: string | null;
  campaign: string | null;
  /** user@host of the person who ran the scrub. */
  operator: string;
  profile: string | null;
}

export interface ComplianceSettings {
  listPath: string;
  listExplicit: boolean;
  /** The team's list, in the PostgreSQL store (listPath is then the store's URL without its password). */
  teamList: boolean;
  parties: ScrubParties;
  validity: ValidityRules;
}

/** user@host, for the audit log and the manifest (USER/LOGNAME from the injected environment first). */
export function operatorOf(env: Record<string, string | undefined>): string {
  let user = env.USER || env.LOGNAME || '';
  if (!user) {
    try {
      user = os.userInfo().username;
    } catch {
      user = 'unknown';
    }
  }
  return `${user}@${os.hostname()}`;
}

/** What reading the compliance settings needs of a command's context: its flags, environment, folders and stores. */
export interface ComplianceContext {
  flags: GlobalFlags;
  env: Record<string, string | undefined>;
  homedir: string;
  cwd: string;
  /** The stores the `store` setting names: a team store holds the team's list. */
  stores(): Promise<Stores>;
}

export async function complianceSettings(
  ctx: ComplianceContext,
  flags: ComplianceFlags = {},
): Promise<ComplianceSettings> {
  const { file } = await loadConfigFile(ctx.flags, ctx.env, ctx.homedir);
  const stores = await ctx.stores();
  // With a team store the list is the team's: a list file named as well would be a second list, silently ignored.
  const named = flags.suppressionList ?? (ctx.env.DNC_SUPPRESSION_LIST || undefined) ?? file.suppression_list;
  const teamList = stores.teamListWhere;
  if (teamList !== null && named !== undefined) {
    throw usageError(
      'E_STORE_INVALID',
      'a suppression list file is named (--suppression-list, DNC_SUPPRESSION_LIST or "suppression_list"), but the ' +
        `store is the team's (${teamList}), whose internal list is the one every member uses`,
      {
        hint: 'leave the list file out; to move its numbers and exemptions into the team store: dnc store import FILE',
      },
    );
  }
  const list = resolveListPath(
    stateDir(ctx.env, ctx.homedir),
    ctx.cwd,
    flags.suppressionList,
    ctx.env,
    file.suppression_list,
  );
  const text = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : v.trim());
  return {
    listPath: teamList ?? list.path,
    listExplicit: teamList !== null || list.explicit,
    teamList: teamList !== null,
    parties: {
      seller: text(flags.seller) ?? text(file.seller),
      san: text(flags.san) ?? text(file.san),
      campaign: text(flags.campaign) ?? text(file.campaign),
      operator: operatorOf(ctx.env),
      profile: file.profile ?? null,
    },
    validity: validityRules(file.validity_days),
  };
}

/**
 * Opens the list for reading (check, batch, verify): null when the default list has never been written. A list
 * named explicitly must exist: a mistyped path would otherwise scrub against no list at all, silently.
 */
/** A list whose entries its audit log does not account for: nothing done with it can be vouched for. */
export function listAlteredError(
  listPath: string,
  problem: string,
  consequence = 'nothing was sent',
  anchored = false,
) {
  // The team's list lives in the store (listPath is its URL): no file to put back, and no member can mend it.
  if (isTeamStoreUrl(listPath))
    return inputError(
      'E_LIST_ALTERED',
      `the team's suppression list in ${listPath} was altered outside dnc's functions (${problem}); ${consequence}`,
      {
        hint:
          "the store's owner role repairs it from its audit log (`SELECT * FROM dnc.list_repair('you@host', " +
          "'why')`, docs/team.md \"Repairing a team's list\"), or the DBA restores the database from a backup when " +
          'the log itself was cut; `dnc suppress log` shows its history. No member can mend it, and every member is ' +
          'refused until it is whole',
      },
    );
  return inputError(
    'E_LIST_ALTERED',
    `the suppression list ${listPath} was altered outside dnc (${problem}); ${consequence}`,
    {
      hint: anchored
        ? 'put back the list this machine last saw (a backup), or, if the list you have now is the one to keep, ' +
          'say so with `dnc suppress restore FILE --reason TEXT` (recorded in its audit log)'
        : '`dnc suppress log` shows its history; restore the file from a backup, or re-add the numbers with ' +
          '`dnc suppress add`',
    },
  );
}

/** The list the settings name: the team's (in the store), or a file (null when it does not exist and not `create`). */
export async function openList(
  ctx: Pick<ComplianceContext, 'stores'>,
  s: ComplianceSettings,
  create: boolean,
): Promise<SuppressionList | null> {
  if (s.teamList) return (await ctx.stores()).teamList();
  return SuppressionStore.open(s.listPath, { create, explicit: s.listExplicit });
}

/** The list to read (list, export, count, log): an empty one when it was never written (reading creates nothing). */
export async function openListToRead(
  ctx: Pick<ComplianceContext, 'stores'>,
  s: ComplianceSettings,
): Promise<{ list: SuppressionList; opened: SuppressionList | null }> {
  const opened = await openList(ctx, s, false);
  return { list: opened ?? (await SuppressionStore.empty(s.listPath)), opened };
}

/**
 * The list a scrub recorded (report, verify): the team's when it names this machine's team store, else the file it
 * names; null when it is not there (or is another team's store).
 */
export async function openRecordedList(
  ctx: Pick<ComplianceContext, 'stores'>,
  recordedPath: string,
): Promise<SuppressionList | null> {
  if (/^postgres(ql)?:\/\//i.test(recordedPath)) {
    const stores = await ctx.stores();
    return stores.where === recordedPath ? stores.teamList() : null;
  }
  return SuppressionStore.open(recordedPath, { create: false });
}

/** This machine's own list file (what `dnc store import` moves into a team store), whatever the store setting. */
export async function openLocalList(
  ctx: Pick<ComplianceContext, 'flags' | 'env' | 'homedir' | 'cwd'>,
  flag: string | undefined,
): Promise<{ list: SuppressionList | null; path: string }> {
  const { file } = await loadConfigFile(ctx.flags, ctx.env, ctx.homedir);
  const where = resolveListPath(stateDir(ctx.env, ctx.homedir), ctx.cwd, flag, ctx.env, file.suppression_list);
  return {
    list: await SuppressionStore.open(where.path, { create: false, explicit: where.explicit }),
    path: where.path,
  };
}

export async function openListForScrub(
  ctx: AnchorContext & Pick<ComplianceContext, 'stores'>,
  s: ComplianceSettings,
  only?: readonly string[],
  consequence?: string,
): Promise<SuppressionList | null> {
  const store = await openList(ctx, s, false);
  if (!store && s.listExplicit) {
    throw usageError('E_LIST_MISSING', `the suppression list ${s.listPath} does not exist; nothing was sent`, {
      hint:
        'check --suppression-list, DNC_SUPPRESSION_LIST or "suppression_list" in the config file (`dnc ' +
        'suppress add` creates a list)',
    });
  }
  // A list changed behind dnc's back could let an opted-out number through: nothing is sent against it.
  // `only`: those numbers checked alone. The head is read first: the log verified next holds it and all before it,
  // so the head anchored is one verified (a colleague's change meanwhile is anchored by the next command).
  const head = store ? (await store.identity()).audit_head : null;
  const problem = (await store?.integrityProblem(only)) ?? null;
  if (store && problem) {
    await store.close();
    throw listAlteredError(s.listPath, problem, consequence);
  }
  try {
    await checkListAnchor(ctx, store, s.listPath, consequence, head);
  } catch (err) {
    await store?.close();
    throw err;
  }
  return store;
}

/** Opens (creating it when missing) the list a `dnc suppress` / `dnc exempt` command changes, its anchor checked. */
export async function openListForChange(
  ctx: ComplianceContext,
  flags: ComplianceFlags,
): Promise<{ store: SuppressionList; operator: string }> {
  const s = await complianceSettings(ctx, flags);
  // The default list lives in the state folder: never made inside a home folder that does not exist.
  if (
    !s.teamList &&
    !s.listExplicit &&
    !existsSync(s.listPath) &&
    missingHome(ctx.env, ctx.homedir, 'state') !== null
  ) {
    const why = `the home folder ${ctx.homedir} does not exist (dnc does not create it)`;
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot keep the internal do-not-call list in ${s.listPath}: ${why}`, {
      hint:
        'give --suppression-list PATH (or DNC_SUPPRESSION_LIST), or set HOME to a folder that exists ' +
        '(or XDG_STATE_HOME); nothing was changed',
    });
  }
  const existed = s.teamList || existsSync(s.listPath);
  const store = await openList(ctx, s, true);
  try {
    // A team list whose log was cut is refused for changes too (the next entry would chain onto the cut).
    const problem = s.teamList ? await store!.integrityProblem() : null;
    if (problem) throw listAlteredError(s.listPath, problem, 'nothing was changed');
    await checkListAnchor(ctx, existed ? store : null, s.listPath, 'nothing was changed');
  } catch (err) {
    await store?.close();
    throw err;
  }
  return { store: store!, operator: s.parties.operator };
}

/** What anchoring a list's head needs of a command's context: where the state folder is. */
export type AnchorContext = Pick<ComplianceContext, 'env' | 'homedir'>;

async function openAnchors(ctx: AnchorContext, { create = true } = {}): Promise<Anchors | null> {
  // Anchors are kept where the user's state is, made at a list's first use (a list used before the folder existed
  // would otherwise go unanchored until something else made it); none when it would lie in a missing home folder.
  const dir = keptFolder(ctx.env, ctx.homedir, 'state');
  if (dir === null || (!create && !existsSync(anchorsPath(dir)))) return null;
  try {
    return await Anchors.open(dir);
  } catch {
    return null;
  }
}

/**
 * The list's audit log must still hold the newest head this machine saw of it (anchored in the state folder, where
 * whoever can write the list file cannot): a log whose last entries were cut, with the suppressions they recorded,
 * still chains and agrees with its entries, and only the anchor shows what is missing. A log that has grown since
 * (a colleague's change to a shared list) moves the anchor on. A list gone, or another list standing where it was,
 * is refused the same way, unless the anchored one was empty.
 */
export async function checkListAnchor(
  ctx: AnchorContext,
  store: SuppressionList | null,
  listPath: string,
  consequence = 'nothing was sent',
  /** The head verified by the caller (else the list's head now). */
  verifiedHead?: string | null,
): Promise<void> {
  // No list and no anchors: nothing was anchored that could be gone (and nothing is to be anchored).
  const anchors = await openAnchors(ctx, { create: store !== null });
  if (!anchors) return;
  try {
    const anchor = anchors.list(store?.id ?? null, listPath);
    const lost = anchor !== null && (anchor.head !== null || anchor.entries > 0);
    if (!store) {
      if (lost)
        throw listAlteredError(
          listPath,
          `it is gone; this machine last saw it with ${anchor.entries} audit entries at ${anchor.at}`,
          consequence,
          true,
        );
      return;
    }
    const head = verifiedHead !== undefined ? verifiedHead : (await store.identity()).audit_head;
    // A list this machine also knows, copied over another it knows (`cp O.sqlite L.sqlite`): found by its id, its own
    // anchor agrees, but the path was anchored to the other list, whose suppressions it would silently drop.
    const atPath = anchors.listAt(listPath);
    if (atPath && atPath.listId !== store.id && (atPath.head !== null || atPath.entries > 0)) {
      throw listAlteredError(
        listPath,
        `another list (id ${store.id}${anchor?.listId === store.id ? `, last seen here at ${anchor.path}` : ''}) ` +
          `stands where list ${atPath.listId} was, which this machine last saw with ${atPath.entries} audit entries`,
        consequence,
        true,
      );
    }
    if (anchor && anchor.listId !== store.id && lost) {
      throw listAlteredError(
        listPath,
        `another list (id ${store.id}) stands where list ${anchor.listId} was, which this machine last saw with ` +
          `${anchor.entries} audit entries`,
        consequence,
        true,
      );
    }
    if (
      anchor &&
      anchor.listId === store.id &&
      anchor.head !== null &&
      (await store.auditEntryWithHash(anchor.head)) === null
    ) {
      throw listAlteredError(
        listPath,
        `its audit log no longer holds the entry this machine last saw (${anchor.entries} entries, head ` +
          `${anchor.head.slice(0, 12)}… at ${anchor.at}): entries were cut`,
        consequence,
        true,
      );
    }
    if (!anchor || anchor.listId !== store.id || anchor.head !== head)
      anchors.recordList({
        listId: store.id,
        path: listPath,
        head,
        entries: (await store.counts()).audit,
        at: new Date().toISOString(),
      });
  } finally {
    anchors.close();
  }
}

/**
 * After a change: the list's new head is anchored (best effort: a state folder that cannot be written anchors nothing).
 */
export async function anchorListHead(ctx: AnchorContext, store: SuppressionList): Promise<void> {
  const anchors = await openAnchors(ctx);
  if (!anchors) return;
  try {
    anchors.recordList({
      listId: store.id,
      path: store.path,
      head: (await store.identity()).audit_head,
      entries: (await store.counts()).audit,
      at: new Date().toISOString(),
    });
  } catch {
    // The next command that reads the list anchors it then.
  } finally {
    anchors.close();
  }
}
