// `dnc status`'s core: the results files under some paths, and when each scrub stops being valid to dial.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { inputError } from '../errors.js';
import { DAY_MS, parseServiceTime } from '../time.js';
import { manifestPathFor, readManifest, type Manifest } from '../evidence/manifest.js';
import { validityRules } from '../compliance/validity.js';
import type { Fitness } from '../verify/fitness.js';

/**
 * not_fit: `dnc verify` says so for a reason other than age (the file changed, its journal is gone, rows unfinished).
 */
export type ScrubState = 'expired' | 'expiring' | 'valid' | 'nothing_callable' | 'not_fit';

export interface ScrubStatus {
  output: string;
  manifest: string;
  finished_at: string | null;
  rows: number;
  callable: number;
  seller: string | null;
  campaign: string | null;
  /** The last moment every callable row is still valid (ISO 8601, inclusive); null when no row is callable. */
  valid_until: string | null;
  valid_until_by_country: Record<string, string>;
  /** Days from the as-of time to valid_until (negative once expired), one decimal. */
  days_left: number | null;
  state: ScrubState;
  /** What `dnc verify` says now (the same judgement): fit to dial, and why not, and what makes it fit. */
  fit: boolean;
  /** fit, not_fit or unproven (its journal gone): the judgement's own word. */
  fitness: Fitness['state'];
  not_fit_because: string | null;
  way_out: string[];
}

/** `dnc verify`'s judgement of one output, as status needs it (injected: the use case reads the list and anchors). */
export type JudgeFit = (output: string) => Promise<{ fitness: Fitness; onlyStale: boolean }>;

/** Manifests named by PATHs: a results CSV, its manifest, or a folder (its *.manifest.json, not recursive). */
export function findManifests(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    if (!existsSync(p))
      throw inputError('E_INPUT_MISSING', `${p} does not exist`, {
        hint: 'give results files of `dnc batch`, or folders holding them',
      });
    if (statSync(p).isDirectory()) {
      for (const name of readdirSync(p).sort()) if (name.endsWith('.manifest.json')) out.add(path.join(p, name));
    } else if (p.endsWith('.manifest.json')) out.add(p);
    else {
      const m = manifestPathFor(p);
      if (!existsSync(m))
        throw inputError('E_NO_MANIFEST', `${p} has no manifest (${m} is missing)`, {
          hint: 'status reads the manifest `dnc batch` writes beside its output',
        });
      out.add(m);
    }
  }
  return [...out];
}

/**
 * valid_until of a manifest. Manifests written before validity was recorded give only the oldest
 * checked_at of the file: it is judged with the shortest built-in window (28 days), never too kindly.
 */
export function validUntilOf(m: Manifest): { at: string | null; byCountry: Record<string, string> } {
  if (m.validity) return { at: m.validity.valid_until, byCountry: m.validity.valid_until_by_country };
  if ((m.rows.by_result.callable ?? 0) === 0) return { at: null, byCountry: {} };
  const oldest = parseServiceTime(m.checked_at.oldest);
  if (!Number.isFinite(oldest)) return { at: null, byCountry: {} };
  const shortest = Math.min(...Object.values(validityRules(undefined).byCountry), validityRules(undefined).otherDays);
  return { at: new Date(oldest + shortest * DAY_MS).toISOString(), byCountry: {} };
}

export async function scrubStatus(
  paths: readonly string[],
  asOf: Date,
  withinMs: number,
  judge: JudgeFit,
): Promise<ScrubStatus[]> {
  const out: ScrubStatus[] = [];
  for (const file of findManifests(paths)) {
    const m = await readManifest(file);
    if (!m) continue;
    const v = validUntilOf(m);
    const left = v.at === null ? null : Date.parse(v.at) - asOf.getTime();
    const { fitness, onlyStale } = await judge(m.output.path);
    const fit = fitness.state === 'fit';
    // Age is said as expired/expiring; anything else verify finds makes the file not fit, whatever its age.
    const state: ScrubState =
      !fit && !onlyStale
        ? 'not_fit'
        : left === null
          ? 'nothing_callable'
          : left < 0 || !fit
            ? 'expired'
            : left < withinMs
              ? 'expiring'
              : 'valid';
    out.push({
      output: m.output.path,
      manifest: file,
      finished_at: m.finished_at,
      rows: m.rows.total,
      callable: m.rows.by_result.callable ?? 0,
      seller: m.compliance?.parties.seller ?? null,
      campaign: m.compliance?.parties.campaign ?? null,
      valid_until: v.at,
      valid_until_by_country: v.byCountry,
      days_left: left === null ? null : Math.round((left / DAY_MS) * 10) / 10,
      state,
      fit,
      fitness: fitness.state,
      not_fit_because: fitness.because,
      way_out: fitness.wayOut,
    });
  }
  return out;
}
