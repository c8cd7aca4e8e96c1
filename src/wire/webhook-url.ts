// The description's rule for a webhook_url (4.1, 6, 8), checked by the client before spending and by the sandbox.
import { isIP } from 'node:net';

export const WEBHOOK_URL_MAX_LENGTH = 2048;

export interface WebhookUrlRuleOptions {
  /** Allow http:// and loopback hosts: only for `dnc sandbox --allow-insecure-webhooks` setups. */
  allowInsecure?: boolean;
}

/**
 * Returns why `raw` is not an acceptable webhook_url, or null when it is.
 * Only literal addresses can be judged here; the service also re-resolves names at delivery.
 */
export function webhookUrlProblem(raw: string, options: WebhookUrlRuleOptions = {}): string | null {
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) {
    return `it is ${raw.length} characters long; the service accepts at most ${WEBHOOK_URL_MAX_LENGTH}`;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'it is not an absolute URL';
  }
  const insecure = options.allowInsecure === true;
  if (url.protocol !== 'https:' && !(insecure && url.protocol === 'http:')) {
    return `it uses ${url.protocol.replace(/:$/, '')}; the service only pushes to https URLs`;
  }
  if (url.username !== '' || url.password !== '') {
    return 'it carries credentials (user:password@); the service refuses those';
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === '') return 'it has no host';
  const kind = privateHostKind(host);
  if (kind === 'loopback' && insecure) return null;
  if (kind) return `its host ${url.hostname} is a ${kind} address; the service pushes only to public hosts`;
  return null;
}

/** 'loopback', 'private', 'link-local', 'unspecified' or null for a host the public internet could reach. */
export function privateHostKind(host: string): string | null {
  const h = host.replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return 'loopback';
  const family = isIP(h);
  if (family === 4) return ipv4Kind(h);
  if (family === 6) return ipv6Kind(h);
  return null;
}

function ipv4Kind(ip: string): string | null {
  const [a, b] = ip.split('.').map(Number) as [number, number];
  if (a === 127) return 'loopback';
  if (a === 0) return 'unspecified';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b >= 64 && b <= 127) return 'private'; // carrier-grade NAT
  if (a === 169 && b === 254) return 'link-local';
  return null;
}

function ipv6Kind(ip: string): string | null {
  if (ip === '::1') return 'loopback';
  if (ip === '::') return 'unspecified';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (mapped) return ipv4Kind(mapped[1]!);
  if (/^fe[89ab]/.test(ip)) return 'link-local';
  if (/^f[cd]/.test(ip)) return 'private';
  return null;
}
