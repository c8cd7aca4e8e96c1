// `dnc suppress restore`: a list put back from a backup on purpose, recorded in its audit log and anchored afresh.
import { copyFile, rename, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { tempPathFor } from '../atomic-file.js';
import { describeFsError, inputError, usageError } from '../errors.js';
import { Anchors } from '../stores/anchors.js';
import { stateDir } from '../paths.js';
import { complianceSettings, listAlteredError, type ComplianceContext, type ComplianceFlags } from './settings.js';
import { SuppressionStore } from '../stores/suppression-store.js';

export interface RestoredList {
  list: string;
  from: string;
  /** Where the list it replaced was kept (null when the list was accepted in place, or there was none). */
  replacedKeptAt: string | null;
  /** The head this machine had anchored before (what the restore sets aside), or null. */
  previousHead: string | null;
  entries: number;
}

/**
 * Puts `from` in place of the list (the replaced file is kept beside it, never deleted) or, when `from` is the list
 * itself, accepts it as it stands; then appends a `restore` entry (who, why, from where, which head it set aside) and
 * anchors the new head. The backup must be a whole list: an altered one is refused.
 */
export async function restoreList(
  ctx: ComplianceContext & { now(): Date },
  flags: ComplianceFlags,
  from: string,
  reason: string,
): Promise<RestoredList> {
  const s = await complianceSettings(ctx, flags);
  if (s.teamList)
    throw usageError('E_STORE_INVALID', `restore puts back a list file; the store is the team's (${s.listPath})`, {
      hint:
        "its owner's role repairs it, audited: SELECT * FROM dnc.list_repair('user@host', 'why') (docs/team.md), " +
        'or restores the store from a backup',
    });
  const source = path.resolve(ctx.cwd, from);
  const backup = await SuppressionStore.open(source, { create: false, explicit: true });
  if (!backup)
    throw inputError('E_INPUT_MISSING', `${source} does not exist`, {
      hint: 'give the backup of the list to put back, or the list itself to accept it as it stands',
    });
  const problem = await backup.integrityProblem();
  await backup.close();
  if (problem) throw listAlteredError(source, problem, 'it was not restored');
  const dir = stateDir(ctx.env, ctx.homedir);
  const anchors = existsSync(dir) ? await Anchors.open(dir) : null;
  try {
    const previous = anchors?.list(null, s.listPath) ?? null;
    let keptAt: string | null = null;
    if (path.resolve(source) !== path.resolve(s.listPath)) {
      if (existsSync(s.listPath)) {
        // The list it replaces is evidence too (of what was cut): kept beside it, private.
        keptAt = `${s.listPath}.replaced-${ctx.now().toISOString().replace(/[:.]/g, '-')}`;
        await rename(s.listPath, keptAt);
      }
      const tmp = tempPathFor(s.listPath);
      try {
        await copyFile(source, tmp);
        await rename(tmp, s.listPath);
      } catch (err) {
        await rm(tmp, { force: true });
        if (keptAt) await rename(keptAt, s.listPath).catch(() => {});
        throw inputError(
          'E_OUTPUT_UNWRITABLE',
          `cannot put ${source} in place of ${s.listPath}: ${describeFsError(err)}`,
          { cause: err },
        );
      }
    }
    const store = (await SuppressionStore.open(s.listPath, { create: false, explicit: s.listExplicit }))!;
    try {
      const replaced = previous
        ? `replaced list ${previous.listId} at head ${previous.head ?? '(none)'} (${previous.entries} entries, ` +
          `anchored ${previous.at})`
        : 'no anchored list replaced';
      await store.recordRestore({ who: s.parties.operator, reason, source }, ctx.now(), replaced);
      anchors?.forgetListsAt(s.listPath);
      const identity = await store.identity();
      anchors?.recordList({
        listId: store.id,
        path: s.listPath,
        head: identity.audit_head,
        entries: identity.audit_entries,
        at: ctx.now().toISOString(),
      });
      return {
        list: s.listPath,
        from: source,
        replacedKeptAt: keptAt,
        previousHead: previous?.head ?? null,
        entries: identity.audit_entries,
      };
    } finally {
      await store.close();
    }
  } finally {
    anchors?.close();
  }
}
