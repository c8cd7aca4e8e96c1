// Is the webhook URL refused, or was a 400 about its number? The service answers both with a 400 whose body the
// description does not show; the first 202 settles it. Pure bookkeeping, tested without HTTP.

/** 400s of webhook-mode lookups waiting before any 202, at most this many less one; the next says the URL is refused. */
export const PARKED_AT_MOST = 3;

export interface ParkedLookup<T> {
  item: T;
  /** The service's 400 message. */
  message: string;
  body: unknown;
}

export class WebhookUrlProbe<T> {
  /** The service took the URL once (a 202): a 400 since is about its number. */
  accepted = false;
  private readonly parked: Array<ParkedLookup<T>> = [];

  /**
   * A 400 of a webhook-mode lookup before the URL was ever accepted: it waits (uncharged either way) unless too many
   * wait already. False: it is not parked. Told by statuses alone, never by the words of the message (the interface
   * does not show the 400's body): one URL serves every lookup, so a 202 proves it good and PARKED_AT_MOST 400s
   * with none (or none by the end) prove it refused.
   */
  park(item: T, message: string, body: unknown): boolean {
    if (this.accepted || this.parked.length >= PARKED_AT_MOST - 1) return false;
    this.parked.push({ item, message, body });
    return true;
  }

  /** A 202: the URL is good, so the 400s that waited were about their numbers (returned, to be recorded so). */
  accept(): Array<ParkedLookup<T>> {
    this.accepted = true;
    return this.parked.splice(0);
  }

  /** The waiting lookups, taken out (the run stops, or the URL is refused: they go back to the queue). */
  drain(): Array<ParkedLookup<T>> {
    return this.parked.splice(0);
  }

  get waiting(): number {
    return this.parked.length;
  }

  /** The message of the first 400 that waits (what the refusal quotes). */
  get firstMessage(): string | undefined {
    return this.parked[0]?.message;
  }
}
