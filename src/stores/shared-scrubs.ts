// A scrub other runners may help with (`dnc batch --join`): its owner lists the numbers it will send in the team
// store; a runner that joins takes some of them and claims them as any member does. The claims (team-claims.ts) stay
// the only arbiter of who pays: this only says which numbers a joiner should try, and when the scrub is over.

/** A number of a shared scrub, with the validity window its owner reuses a colleague's verdict within (null: none). */
export interface SharedNumber {
  e164: string;
  country: string;
  windowMs: number | null;
}

export type SharedScrubState = 'running' | 'done' | 'stopped';

/** A shared scrub as a joiner finds it. */
export interface SharedScrubInfo {
  id: string;
  /** The service origin its owner looks numbers up at. */
  service: string;
  /** Whether its account (API key) is the one this runner's key names: a joiner of another account is refused. */
  sameAccount: boolean;
  /** Its owner, as its claims name it. */
  owner: string;
  /** When it began, by the store's clock: a colleague's verdict settled since is this scrub's. */
  startedAt: Date;
  state: SharedScrubState;
  /** Every number it will send is listed (its owner read its whole list). */
  listed: boolean;
  numbers: number;
  /** Its owner is a live member of the team (a killed owner's scrub is over, whatever its state says). */
  ownerAlive: boolean;
}

/** The shared scrubs of one service and account in a team store. */
export interface SharedScrubs {
  /** Starts sharing a scrub of `owner`: its id, to give `dnc batch --join`. */
  start(owner: string): Promise<string>;
  /** Lists more of its numbers (`complete`: the last of them). */
  list(id: string, numbers: readonly SharedNumber[], complete: boolean): Promise<void>;
  /** The scrub is over: joiners stop, its numbers are removed. */
  end(id: string, state: 'done' | 'stopped'): Promise<void>;
  find(id: string): Promise<SharedScrubInfo | null>;
  /**
   * Takes up to `limit` numbers of the scrub for `claimant`, from the end of its list (its owner works from the
   * start): none another joiner took, none claimed or answered since the scrub began. They are still to be claimed.
   * Null when none is left untaken.
   */
  take(scrub: SharedScrubInfo, claimant: string, limit: number): Promise<SharedNumber[] | null>;
}
