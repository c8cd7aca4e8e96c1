// Names in webhook URLs, resolved when a lookup arrives: section 6 says the host is resolved *again* at delivery,
// so a name that resolves to a private, loopback or link-local address is refused up front (400), not only later.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { privateHostKind } from '../wire/webhook-url.js';

/** A name's addresses; injected in tests (resolution depends on the machine). */
export type ResolveHost = (host: string) => Promise<string[]>;

export const resolveWithDns: ResolveHost = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

const FRESH_MS = 60_000;
// A resolver that hangs must not hold a lookup up: past this, the name is taken as public (delivery checks again).
const WAIT_MS = 2_000;

export class WebhookHosts {
  private readonly known = new Map<string, { kind: string | null; at: number }>();

  constructor(
    private readonly resolve: ResolveHost = resolveWithDns,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** The name in `webhookUrl` when it has one to resolve (not an address, not localhost, which the rule judges). */
  static nameIn(webhookUrl: string): string | null {
    let host: string;
    try {
      host = new URL(webhookUrl).hostname.replace(/^\[|\]$/g, '').toLowerCase();
    } catch {
      return null;
    }
    return host === '' || isIP(host) !== 0 || privateHostKind(host) !== null ? null : host;
  }

  /** Whether `host` must be resolved before it can be judged (never seen, or seen too long ago). */
  stale(host: string): boolean {
    const k = this.known.get(host);
    return k === undefined || this.clock() - k.at > FRESH_MS;
  }

  /** Resolves `host`: a name that does not resolve (or not in time) counts as public here. */
  async refresh(host: string): Promise<void> {
    let kind: string | null = null;
    try {
      const addresses = await Promise.race([
        this.resolve(host),
        new Promise<string[]>((r) => setTimeout(() => r([]), WAIT_MS).unref()),
      ]);
      for (const a of addresses) {
        kind = privateHostKind(a);
        if (kind) break;
      }
    } catch {
      kind = null;
    }
    this.known.set(host, { kind, at: this.clock() });
  }

  /** What the last resolution of `host` said: a non-public kind, or null. */
  kindOf(host: string): string | null {
    return this.known.get(host)?.kind ?? null;
  }
}
