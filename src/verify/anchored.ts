// What the anchors a verifier can see say of the file it holds: the state folder's (what dnc last wrote at this path on
// this machine) and the team store's (every version of the run's output any member's dnc wrote, found by the run id
// the manifest carries). A file anchored nowhere the verifier can see is unproven: its CSV, manifest and journal could
// have been rewritten together (docs/compliance-evidence.md).
import type { OutputAnchor } from '../stores/anchors.js';
import type { TeamOutputAnchor } from '../stores/interfaces.js';

/** The anchors a verifier found for one output. */
export interface AnchorsSeen {
  /** The state folder's anchor of this output's path; null when it has none. */
  local: OutputAnchor | null;
  /** The team store's anchors of the manifest's run, oldest first; null without a team store (or unread). */
  team: TeamOutputAnchor[] | null;
  /** Why the team store's anchors could not be read (it is configured), or null. */
  teamUnread: string | null;
  /** The manifest's run id (absent in manifests of older releases). */
  runId: string | null;
}

/** Who anchored what the file is. */
export interface AnchoredBy {
  where: 'state folder' | 'team store';
  at: string;
  /** Where dnc wrote it (the file may have been moved or copied since). */
  output: string;
  /** The team store's database role that wrote the anchor (the server's session_user: not a claim). */
  who?: string;
  /** Who that dnc said it ran as (USER@host) and on which host: claims, recorded for the auditor. */
  operator?: string;
  host?: string;
}

export interface AnchorJudgement {
  /** matches: an anchor vouches for this file and manifest; differs: one says they changed; not_here: none. */
  anchored: 'matches' | 'differs' | 'not_here';
  by: AnchoredBy | null;
  differences: string[];
  /** Where the verifier looked, in words ("this machine's state folder", "the team store"). */
  lookedIn: string[];
  /** Why a place it should have looked could not be read. */
  unread: string | null;
  /** Why the file is anchored nowhere the verifier can see (it is then unproven), or null. */
  unanchored: string | null;
  /** --unanchored judged such a file: what that did not check; null otherwise. */
  anchorUnchecked: string | null;
}

const short = (sha: string) => `${sha.slice(0, 16)}…`;

/**
 * The judgement of the anchors seen, for a file of SHA-256 `fileSha` beside a manifest of SHA-256 `manifestSha`;
 * `waived`: --unanchored (a file anchored nowhere is then judged by the rest, and that is said).
 */
export function judgeAnchors(seen: AnchorsSeen, fileSha: string, manifestSha: string, waived = false): AnchorJudgement {
  const differences: string[] = [];
  let by: AnchoredBy | null = null;
  const a = seen.local;
  if (a) {
    if (a.sha256 === fileSha && (a.manifestSha256 === null || a.manifestSha256 === manifestSha))
      by = { where: 'state folder', at: a.writtenAt, output: a.output };
    else
      differences.push(
        a.sha256 !== fileSha
          ? `the state folder records that dnc last wrote this file at ${a.writtenAt} with SHA-256 ` +
              `${short(a.sha256)}: it changed since, with its manifest`
          : `the state folder records that dnc last wrote the manifest at ${a.writtenAt}: it was rewritten since`,
      );
  }
  const team = seen.team ?? [];
  if (team.length > 0) {
    const newest = team[team.length - 1]!;
    const same = (t: TeamOutputAnchor) => t.outputSha256 === fileSha && t.manifestSha256 === manifestSha;
    const who = (t: TeamOutputAnchor) => `${t.who} (as ${t.operator} on ${t.host})`;
    if (same(newest))
      by = {
        where: 'team store',
        at: newest.at,
        output: newest.outputPath,
        who: newest.who,
        operator: newest.operator,
        host: newest.host,
      };
    else if (team.some(same))
      differences.push(
        `the team store records a later write of this run's output, at ${newest.at} by ${who(newest)}: this file ` +
          'and manifest are an earlier version',
      );
    else
      differences.push(
        newest.outputSha256 === fileSha
          ? `the team store records this run's manifest as written at ${newest.at} by ${who(newest)}: this one ` +
              'was rewritten since'
          : `the team store records this run's output as written at ${newest.at} by ${who(newest)} with SHA-256 ` +
              `${short(newest.outputSha256)}: this file is not it (rewritten with its manifest)`,
      );
  }
  const lookedIn = [
    "this machine's state folder",
    ...(seen.team !== null || seen.teamUnread ? ['the team store'] : []),
  ];
  const anchored = differences.length > 0 ? 'differs' : by ? 'matches' : 'not_here';
  const unanchored = anchored === 'not_here' ? unanchoredWords(lookedIn, seen.teamUnread, seen.runId) : null;
  return {
    anchored,
    by: differences.length > 0 ? null : by,
    differences,
    lookedIn,
    unread: seen.teamUnread,
    unanchored,
    anchorUnchecked:
      unanchored && waived
        ? 'not checked (--unanchored): that this file and its manifest are what dnc wrote; ' +
          `${unanchored}, and they would pass every other check`
        : null,
  };
}

/** Why a file anchored nowhere the verifier can see is not proven, in one sentence. */
function unanchoredWords(lookedIn: string[], unread: string | null, runId: string | null): string {
  const where = lookedIn.length > 1 ? `neither ${lookedIn.join(' nor ')} holds an` : `${lookedIn[0]} holds no`;
  return (
    `${where} anchor of this file${runId ? ` (run ${runId})` : ' (its manifest has no run id)'}: ` +
    'its rows, manifest and journal could have been rewritten together' +
    (unread ? ` (the team store could not be read: ${unread})` : '')
  );
}
