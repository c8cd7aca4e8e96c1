// Normalisation of a CSV cell to E.164, cached per distinct raw value (libphonenumber costs ~9 µs a call).
import { normalizePhone } from '../phone/normalize.js';

export type CellNumber =
  | { ok: true; e164: string; country: string }
  | { ok: false; message: string; e164: string; country: string };

/** Bounded: when full it starts over, which keeps memory flat on files with millions of distinct values. */
export class PhoneCache {
  private cache = new Map<string, CellNumber>();
  constructor(
    readonly defaultCountry: string | undefined,
    private readonly maxEntries = 100_000,
  ) {}

  normalise(raw: string): CellNumber {
    let hit = this.cache.get(raw);
    if (hit !== undefined) return hit;
    const n = normalizePhone(raw, { defaultCountry: this.defaultCountry });
    hit = n.ok
      ? { ok: true, e164: n.e164, country: n.country ?? '' }
      : { ok: false, message: n.message, e164: n.e164 ?? '', country: n.country ?? '' };
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(raw, hit);
    return hit;
  }
}
