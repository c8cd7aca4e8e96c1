// Is it the webhook URL or the number? The probe without HTTP: 400s wait until a 202 says the URL is good.
import { describe, expect, it } from 'vitest';
import { PARKED_AT_MOST, WebhookUrlProbe } from '../../src/batch/webhook-probe.js';

describe('WebhookUrlProbe', () => {
  it('parks 400s before any 202; a 202 returns them to be recorded as about their numbers', () => {
    const p = new WebhookUrlProbe<string>();
    expect(p.park('+61 1', 'the service rejected the request (400): phone_number is malformed', null)).toBe(true);
    expect(p.waiting).toBe(1);
    expect(p.accept().map((x) => x.item)).toEqual(['+61 1']);
    expect(p.waiting).toBe(0);
    // Once accepted, a 400 is about its number: nothing waits.
    expect(p.park('+61 2', 'malformed', null)).toBe(false);
  });

  it('one 400 too many is not parked: the URL is refused (the words of the message decide nothing)', () => {
    const p = new WebhookUrlProbe<number>();
    expect(p.park(1, 'invalid webhook_url: not https', null)).toBe(true);
    p.drain();
    for (let i = 0; i < PARKED_AT_MOST - 1; i++) expect(p.park(i, 'bad request', null)).toBe(true);
    expect(p.park(99, 'bad request', null)).toBe(false);
    expect(p.firstMessage).toBe('bad request');
    expect(p.drain()).toHaveLength(PARKED_AT_MOST - 1);
    expect(p.waiting).toBe(0);
  });
});
