// What the compliance commands share: where the list is, who is acting, who the scrub is for, the validity windows.
import { existsSync } from 'node:fs';
import os from 'node:os';
import { loadConfigFile, type GlobalFlags } from '../config.js';
import { inputError, usageError } from '../errors.js';
import { Anchors } from '../stores/anchors.js';
import { missingHome, stateDir } from '../paths.js';
import { resolveListPath, SuppressionStore } from '../stores/suppression-store.js';
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

/** What reading the compliance settings needs of a command's context: its flags, environment and folders. */
export interface ComplianceContext {
  flags: GlobalFlags;
  env: Record<string, string | undefined>;
  homedir: string;
  cwd: string;
}

export async function complianceSettings(
  ctx: ComplianceContext,
  flags: ComplianceFlags = {},
): Promise<ComplianceSettings> {
  const { file } = await loadConfigFile(ctx.flags, ctx.env, ctx.homedir);
  const list = resolveListPath(
    stateDir(ctx.env, ctx.homedir),
    ctx.cwd,
    flags.suppressionList,
    ctx.env,
    file.suppression_list,
  );
  const text = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : v.trim());
  return {
    listPath: list.path,
    listExplicit: list.explicit,
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

export async function openListForScrub(
  ctx: AnchorContext,
  s: ComplianceSettings,
  only?: readonly string[],
  consequence?: string,
): Promise<SuppressionStore | null> {
  const store = await SuppressionStore.open(s.listPath, { create: false, explicit: s.listExplicit });
  if (!store && s.listExplicit) {
    throw usageError('E_LIST_MISSING', `the suppression list ${s.listPath} does not exist; nothing was sent`, {
      hint:
        'check --suppression-list, DNC_SUPPRESSION_LIST or "suppression_list" in the config file (`dnc ' +
        'suppress add` creates a list)',
    });
  }
  // A list changed behind dnc's back could let an opted-out number through: nothing is sent against it.
  // `only`: the numbers `dnc check` looks up, checked alone (a whole replay is for batch and verify).
  const problem = store?.integrityProblem(only) ?? null;
  if (store && problem) {
    store.close();
    throw listAlteredError(s.listPath, problem, consequence);
  }
  try {
    await checkListAnchor(ctx, store, s.listPath, consequence);
  } catch (err) {
    store?.close();
    throw err;
  }
  return store;
}

/** Opens (creating it when missing) the list a `dnc suppress` / `dnc exempt` command changes, its anchor checked. */
export async function openListForChange(
  ctx: ComplianceContext,
  flags: ComplianceFlags,
): Promise<{ store: SuppressionStore; operator: string }> {
  const s = await complianceSettings(ctx, flags);
  // The default list lives in the state folder: never made inside a home folder that does not exist.
  if (!s.listExplicit && !existsSync(s.listPath) && missingHome(ctx.env, ctx.homedir, 'state') !== null) {
    const why = `the home folder ${ctx.homedir} does not exist (dnc does not create it)`;
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot keep the internal do-not-call list in ${s.listPath}: ${why}`, {
      hint:
        'give --suppression-list PATH (or DNC_SUPPRESSION_LIST), or set HOME to a folder that exists ' +
        '(or XDG_STATE_HOME); nothing was changed',
    });
  }
  const existed = existsSync(s.listPath);
  const store = await SuppressionStore.open(s.listPath, { create: true, explicit: s.listExplicit });
  try {
    await checkListAnchor(ctx, existed ? store : null, s.listPath, 'nothing was changed');
  } catch (err) {
    store?.close();
    throw err;
  }
  return { store: store!, operator: s.parties.operator };
}

/** What anchoring a list's head needs of a command's context: where the state folder is. */
export type AnchorContext = Pick<ComplianceContext, 'env' | 'homedir'>;

async function openAnchors(ctx: AnchorContext): Promise<Anchors | null> {
  const dir = stateDir(ctx.env, ctx.homedir);
  // Anchors are kept where the user's state is; a machine without a state folder has none to compare with.
  if (!existsSync(dir)) return null;
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
  store: SuppressionStore | null,
  listPath: string,
  consequence = 'nothing was sent',
): Promise<void> {
  const anchors = await openAnchors(ctx);
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
    const head = store.identity().audit_head;
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
      store.auditEntryWithHash(anchor.head) === null
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
        entries: store.counts().audit,
        at: new Date().toISOString(),
      });
  } finally {
    anchors.close();
  }
}

/**
 * After a change: the list's new head is anchored (best effort: a state folder that cannot be written anchors nothing).
 */
export async function anchorListHead(ctx: AnchorContext, store: SuppressionStore): Promise<void> {
  const anchors = await openAnchors(ctx);
  if (!anchors) return;
  try {
    anchors.recordList({
      listId: store.id,
      path: store.path,
      head: store.identity().audit_head,
      entries: store.counts().audit,
      at: new Date().toISOString(),
    });
  } catch {
    // The next command that reads the list anchors it then.
  } finally {
    anchors.close();
  }
}
