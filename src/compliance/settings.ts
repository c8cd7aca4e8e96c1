// What the compliance commands share: where the list is, who is acting, who the scrub is for, the validity windows.
import { existsSync } from 'node:fs';
import os from 'node:os';
import { loadConfigFile } from '../config.js';
import { inputError, usageError } from '../errors.js';
import type { Context } from '../context.js';
import { missingHome, stateDir } from '../evidence/paths.js';
import { resolveListPath, SuppressionStore } from './suppression-store.js';
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

/** What reading the compliance settings needs of a command's context. */
export type ComplianceContext = Pick<Context, 'flags' | 'env' | 'homedir' | 'cwd'>;

export async function complianceSettings(ctx: ComplianceContext, flags: ComplianceFlags = {}): Promise<ComplianceSettings> {
  const { file } = await loadConfigFile(ctx.flags, ctx.env, ctx.homedir);
  const list = resolveListPath(stateDir(ctx.env, ctx.homedir), ctx.cwd, flags.suppressionList, ctx.env, file.suppression_list);
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
export function listAlteredError(listPath: string, problem: string, consequence = 'nothing was sent') {
  return inputError('E_LIST_ALTERED', `the suppression list ${listPath} was altered outside dnc (${problem}); ${consequence}`, {
    hint: '`dnc suppress log` shows its history; restore the file from a backup, or re-add the numbers with `dnc suppress add`',
  });
}

export async function openListForScrub(s: ComplianceSettings, only?: readonly string[], consequence?: string): Promise<SuppressionStore | null> {
  const store = await SuppressionStore.open(s.listPath, { create: false, explicit: s.listExplicit });
  if (!store && s.listExplicit) {
    throw usageError('E_LIST_MISSING', `the suppression list ${s.listPath} does not exist; nothing was sent`, {
      hint: 'check --suppression-list, DNC_SUPPRESSION_LIST or "suppression_list" in the config file (`dnc suppress add` creates a list)',
    });
  }
  // A list changed behind dnc's back could let an opted-out number through: nothing is sent against it.
  // `only`: the numbers `dnc check` looks up, checked alone (a whole replay is for batch and verify).
  const problem = store?.integrityProblem(only) ?? null;
  if (store && problem) {
    store.close();
    throw listAlteredError(s.listPath, problem, consequence);
  }
  return store;
}

/** Opens (creating it when missing) the list a `dnc suppress` / `dnc exempt` command changes. */
export async function openListForChange(ctx: Context, flags: ComplianceFlags): Promise<{ store: SuppressionStore; operator: string }> {
  const s = await complianceSettings(ctx, flags);
  // The default list lives in the state folder: never made inside a home folder that does not exist.
  if (!s.listExplicit && !existsSync(s.listPath) && missingHome(ctx.env, ctx.homedir, 'state') !== null) {
    const why = `the home folder ${ctx.homedir} does not exist (dnc does not create it)`;
    throw inputError('E_OUTPUT_UNWRITABLE', `cannot keep the internal do-not-call list in ${s.listPath}: ${why}`, {
      hint: 'give --suppression-list PATH (or DNC_SUPPRESSION_LIST), or set HOME to a folder that exists ' +
        '(or XDG_STATE_HOME); nothing was changed',
    });
  }
  const store = await SuppressionStore.open(s.listPath, { create: true, explicit: s.listExplicit });
  return { store: store!, operator: s.parties.operator };
}
