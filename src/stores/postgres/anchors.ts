// The team's anchors of outputs in PostgreSQL (migration 3): what each member's dnc wrote, found by the run id the
// manifest carries, so that `dnc verify` on any member's machine proves a colleague's file. Add-only: who and when
// are the server's (a trigger stamps session_user and the time), and a row is never changed (docs/team.md's grants).
import type { TeamAnchors, TeamOutputAnchor, TeamOutputAnchorInput } from '../interfaces.js';
import { SCHEMA } from './migrations.js';
import type { StorePool } from './pool.js';

interface Row {
  run_id: string;
  output_sha256: string;
  output_bytes: string | number;
  manifest_sha256: string;
  output_path: string;
  journal: string;
  host: string;
  operator: string;
  list_id: string | null;
  list_head: string | null;
  list_entries: string | number | null;
  who: string;
  at: Date;
}

export class PgTeamAnchors implements TeamAnchors {
  constructor(private readonly pool: StorePool) {}

  async record(a: TeamOutputAnchorInput): Promise<void> {
    await this.pool.query(
      'anchoring the output in the team store',
      `INSERT INTO ${SCHEMA}.output_anchors (run_id, output_sha256, output_bytes, manifest_sha256, output_path,
         journal, host, operator, list_id, list_head, list_entries)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (run_id, output_sha256, manifest_sha256) DO NOTHING`,
      [
        a.runId,
        a.outputSha256,
        a.outputBytes,
        a.manifestSha256,
        a.outputPath,
        a.journal,
        a.host,
        a.operator,
        a.listId,
        a.listHead,
        a.listEntries,
      ],
    );
  }

  async ofRun(runId: string): Promise<TeamOutputAnchor[]> {
    const rows = await this.pool.query<Row>(
      "reading the team store's anchors",
      `SELECT * FROM ${SCHEMA}.output_anchors WHERE run_id = $1 ORDER BY at, id`,
      [runId],
    );
    return rows.map((r) => ({
      runId: r.run_id,
      outputSha256: r.output_sha256,
      outputBytes: Number(r.output_bytes),
      manifestSha256: r.manifest_sha256,
      outputPath: r.output_path,
      journal: r.journal,
      host: r.host,
      operator: r.operator,
      listId: r.list_id,
      listHead: r.list_head,
      listEntries: r.list_entries === null ? null : Number(r.list_entries),
      who: r.who,
      at: r.at.toISOString(),
    }));
  }
}
