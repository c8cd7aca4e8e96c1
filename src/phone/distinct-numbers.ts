// A set of E.164 numbers stored as 8-byte doubles: counting distinct numbers in a million-row list without a million
// strings.

// An E.164 number has at most 15 digits, below 2^53: as a double it is exact, and it takes 8 bytes in a
// Float64Array instead of a ~60-byte string plus a Set entry. Open addressing, linear probing, load ≤ 0.5.
const EMPTY = 0; // no E.164 number is 0 (the first digit is 1–9)

export class DistinctNumbers {
  private slots = new Float64Array(1 << 16);
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Adds `e164` ("+12025550123"); true when it was not there yet. */
  add(e164: string): boolean {
    const key = Number(e164.slice(1));
    if (!Number.isSafeInteger(key) || key === EMPTY) throw new RangeError(`not an E.164 number: ${e164}`);
    if ((this.count + 1) * 2 > this.slots.length) this.grow();
    if (!insert(this.slots, key)) return false;
    this.count++;
    return true;
  }

  private grow(): void {
    const old = this.slots;
    this.slots = new Float64Array(old.length * 2);
    for (const key of old) if (key !== EMPTY) insert(this.slots, key);
  }
}

function insert(slots: Float64Array, key: number): boolean {
  const mask = slots.length - 1;
  // Mix the high and low halves: numbers of one list share long prefixes.
  let i = (Math.imul((key % 4294967296) ^ Math.floor(key / 4294967296), 0x9e3779b1) >>> 0) & mask;
  for (;;) {
    const at = slots[i]!;
    if (at === EMPTY) {
      slots[i] = key;
      return true;
    }
    if (at === key) return false;
    i = (i + 1) & mask;
  }
}
