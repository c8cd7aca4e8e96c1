// Where what dnc wrote is anchored: the user's state folder always (src/stores/anchors.ts), and, with a team store,
// the store too, so that `dnc verify` on any member's machine finds the anchor of a colleague's file by the run id
// its manifest carries (docs/compliance-evidence.md: who can write where, and what each anchor proves).
import { hostname } from 'node:os';
import { operatorOf } from '../compliance/settings.js';
import { keptFolder } from '../paths.js';
import type { Stores } from '../stores/owner.js';
import { anchorWritten, type WrittenManifest } from './manifest.js';

export interface AnchorDeps {
  env: Record<string, string | undefined>;
  homedir: string;
  now(): Date;
  stores(): Promise<Stores>;
}

export interface Anchored {
  /** In the state folder. */
  local: boolean;
  /** In the team store: true, false when there is none (the local files), or why it could not be written. */
  team: boolean | string;
}

/** Anchors a manifest just written, and its output: in the state folder, and in the team store when there is one. */
export async function anchorEverywhere(d: AnchorDeps, written: WrittenManifest): Promise<Anchored> {
  const state = keptFolder(d.env, d.homedir, 'state');
  const local = state !== null && (await anchorWritten(state, written, d.now()));
  return { local, team: await anchorInTeam(d, written) };
}

async function anchorInTeam(d: AnchorDeps, written: WrittenManifest): Promise<boolean | string> {
  const m = written.manifest;
  try {
    const anchors = await (await d.stores()).teamAnchors();
    if (!anchors) return false;
    if (!m.run_id) return 'the manifest has no run id';
    const list = m.compliance?.list ?? null;
    await anchors.record({
      runId: m.run_id,
      outputSha256: m.output.sha256,
      outputBytes: m.output.bytes,
      manifestSha256: written.sha256,
      outputPath: m.output.path,
      journal: m.journal,
      host: hostname(),
      operator: operatorOf(d.env),
      listId: list?.id ?? null,
      listHead: list?.audit_head ?? null,
      listEntries: list?.audit_entries ?? null,
    });
    return true;
  } catch (err) {
    return (err as Error).message;
  }
}
