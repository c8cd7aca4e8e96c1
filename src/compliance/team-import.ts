// `dnc store import`: this machine's internal list and exemptions moved into the team store, audit log and all.
import { inputError, usageError } from '../errors.js';
import type { Stores } from '../stores/owner.js';
import type { ListIdentity } from '../stores/suppression-types.js';
import {
  anchorListHead,
  checkListAnchor,
  listAlteredError,
  openLocalList,
  operatorOf,
  type ComplianceContext,
} from './settings.js';

export interface ListImportDeps extends Omit<ComplianceContext, 'stores'> {
  now(): Date;
}

/** What was moved, and the team list as it stands after. */
export interface ListImported {
  /** The local list file. */
  from: string;
  /** The team store, as shown to people. */
  into: string;
  merged: boolean;
  /** Audit entries added (merged) or copied (imported whole). */
  entries: number;
  numbers: number;
  exemptions: number;
  list: ListIdentity;
}

/**
 * Moves the local list (`flag`, else the configured or default file) into `team`: whole, its audit log copied hashes
 * and all, or with `merge` added to a team list that has entries already. Only a list that checks out moves.
 */
export async function importListIntoTeam(
  deps: ListImportDeps,
  team: Stores,
  flag: string | undefined,
  merge: boolean,
): Promise<ListImported> {
  const { list: local, path: listPath } = await openLocalList(deps, flag);
  if (!local)
    throw usageError('E_LIST_MISSING', `there is no local list at ${listPath} to import`, {
      hint: 'name it with --suppression-list PATH',
    });
  try {
    // Only a whole list moves: one altered (or cut, as this machine's anchor shows) would bring its gap along.
    const problem = await local.integrityProblem();
    if (problem) throw listAlteredError(listPath, problem, 'nothing was imported');
    await checkListAnchor(deps, local, listPath, 'nothing was imported');
    const list = await team.teamList();
    if (list === null) throw usageError('E_STORE_INVALID', 'the team store has no list');
    const operator = operatorOf(deps.env);
    const [log, suppressions, exemptions] = [await local.audit(), await local.suppressions(), await local.exemptions()];
    const entries = merge
      ? (
          await list.merge(
            suppressions,
            exemptions,
            `import of list ${local.id} (${listPath})`,
            { who: operator },
            deps.now(),
          )
        ).changed
      : await list.importLog(log, suppressions, exemptions, operator);
    const after = await list.integrityProblem();
    if (after) throw inputError('E_LIST_ALTERED', `the team's list does not check out after the import: ${after}`);
    await anchorListHead(deps, list);
    return {
      from: listPath,
      into: team.where,
      merged: merge,
      entries,
      numbers: suppressions.length,
      exemptions: exemptions.length,
      list: await list.identity(),
    };
  } finally {
    await local.close();
  }
}
