// The description's rule for a webhook_url (4.1, 6, 8), checked by the client before spending and by the sandbox.
import { isIP } from 'node:net';
import { carriesSecret } from '../secrets.js';

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
  // The URL parser would quietly percent-encode a space: the service takes the text as given and refuses it.
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) return 'it contains a space or a control character (percent-encode it)';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'it is not an absolute URL';
  }
  if (url.port === '0') return 'it names port 0, which nothing can listen on';
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
  if ((kind === 'loopback' || kind === NON_PUBLIC_NAME) && insecure) return null;
  if (kind === NON_PUBLIC_NAME)
    return (
      `its host ${url.hostname} is not a public name (a reserved suffix or a single label); the service ` +
      `pushes only to public hosts`
    );
  if (kind) return `its host ${url.hostname} is a ${kind} address; the service pushes only to public hosts`;
  return null;
}

/**
 * A name no public DNS answers for: reserved suffixes (RFC 2606, 6761, 6762, 8375, ICANN's .internal) and single
 * labels.
 */
const NON_PUBLIC_NAME = 'non-public name';
const NON_PUBLIC_SUFFIXES = [
  'local',
  'internal',
  'test',
  'invalid',
  'example',
  'home.arpa',
  'lan',
  'corp',
  'intranet',
  'private',
  'localdomain',
];

/** Secrets shorter than this are not looked for in a URL: they would match ordinary URL text. */
export const MIN_SECRET_LENGTH = 8;

/**
 * Whether `raw` carries `secret` in any form a reader could turn back into it: as typed in any letter case,
 * percent-encoded (decoded as often as that changes it, since `%2541` is the key to whoever decodes twice), in
 * hex, or in base64 or base64url at any of the three byte alignments it can sit at inside a longer encoded text.
 * The URL goes to the service, which keeps it and pushes to it, and into the batch journal.
 */
export function webhookUrlCarries(raw: string, secret: string): boolean {
  if (secret.length < MIN_SECRET_LENGTH) return false;
  // Every form the masking rule finds (escapes, entities, mixed encodings), then the lowered forms a URL may take.
  if (carriesSecret(raw, [secret])) return true;
  const texts = [...decodedForms(raw)].map((t) => t.toLowerCase());
  return secretForms(secret).some((form) => texts.some((text) => text.includes(form)));
}

/** `raw` and its percent-decodings, each decoded again while that changes it (at most 4 times). */
function decodedForms(raw: string): Set<string> {
  const forms = new Set([raw]);
  let last = raw;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(last);
    } catch {
      break; // a malformed escape: the forms so far are checked
    }
    if (next === last) break;
    forms.add(next);
    last = next;
  }
  return forms;
}

/**
 * The texts (lower case: compared with the URL lowered) that only `secret` can produce: itself, its hex, and the
 * part of its base64 and base64url that does not depend on the bytes before and after it, for each alignment.
 * Lowered, the base64 forms match more than they should, by one chance in 2^(5n) for n letters: none that matters.
 */
function secretForms(secret: string): string[] {
  const forms = new Set<string>();
  for (const variant of new Set([secret, secret.toUpperCase(), secret.toLowerCase()])) {
    const bytes = Buffer.from(variant, 'utf8');
    forms.add(variant.toLowerCase());
    forms.add(bytes.toString('hex'));
    for (let skip = 0; skip < 3; skip++) {
      // Starting `skip` bytes in, whole groups of three bytes encode to four characters of their own.
      const whole = bytes.subarray(skip, skip + Math.floor((bytes.length - skip) / 3) * 3);
      if (whole.length < 6) continue;
      forms.add(whole.toString('base64').toLowerCase());
      forms.add(whole.toString('base64url').toLowerCase());
    }
  }
  return [...forms];
}

/**
 * Why a host is not one the public internet could reach ('loopback', 'private', 'link-local', 'unspecified',
 * 'multicast', 'reserved', 'documentation'), or null. Literal addresses only: names are judged when resolved.
 */
export function privateHostKind(host: string): string | null {
  const h = host.replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return 'loopback';
  const family = isIP(h);
  if (family === 4) return ipv4Kind(h.split('.').map(Number));
  if (family === 6) return ipv6Kind(ipv6Bytes(h));
  // A single label (`https://intranet/x`, and `https:///x`, which reads as host "x") resolves only on a local network.
  if (!h.includes('.') || NON_PUBLIC_SUFFIXES.some((s) => h === s || h.endsWith(`.${s}`))) return NON_PUBLIC_NAME;
  return null;
}

function ipv4Kind([a, b, c]: number[]): string | null {
  if (a === 127) return 'loopback';
  if (a === 0) return 'unspecified';
  if (a === 10 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b! >= 64 && b! <= 127) return 'private'; // carrier-grade NAT
  if (a === 169 && b === 254) return 'link-local';
  if (a! >= 224 && a! <= 239) return 'multicast';
  if (a! >= 240) return 'reserved'; // including the broadcast 255.255.255.255
  if ((a === 192 && b === 0 && c === 2) || (a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113))
    return 'documentation';
  if ((a === 198 && (b === 18 || b === 19)) || (a === 192 && b === 0 && c === 0)) return 'reserved';
  return null;
}

/**
 * The 16 bytes of an IPv6 address (valid by isIP): every spelling of one address gives the same bytes, so
 * an IPv4 address inside one is found however it is written (`::ffff:127.0.0.1` and `::ffff:7f00:1` alike).
 */
function ipv6Bytes(ip: string): number[] {
  let text = ip.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [, a, b, c, d] = dotted.map(Number) as [number, number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.flatMap((g) => {
    const v = parseInt(g, 16);
    return [v >> 8, v & 0xff];
  });
}

function ipv6Kind(b: number[]): string | null {
  const zeroUpTo = (n: number) => b.slice(0, n).every((x) => x === 0);
  const v4 = b.slice(12);
  if (zeroUpTo(16)) return 'unspecified';
  if (zeroUpTo(15) && b[15] === 1) return 'loopback';
  // IPv4-mapped (::ffff:0:0/96) and the NAT64 prefix (64:ff9b::/96) reach the IPv4 address inside.
  if (zeroUpTo(10) && b[10] === 0xff && b[11] === 0xff) return ipv4Kind(v4);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b.slice(4, 12).every((x) => x === 0))
    return ipv4Kind(v4);
  if (zeroUpTo(12)) return ipv4Kind(v4) ?? 'reserved'; // IPv4-compatible (::a.b.c.d), deprecated
  if (b[0] === 0xff) return 'multicast';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'private'; // site-local, deprecated
  if ((b[0]! & 0xfe) === 0xfc) return 'private'; // unique local
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return 'documentation';
  if (b[0] === 0x01 && b[1] === 0x00 && b.slice(2, 8).every((x) => x === 0)) return 'reserved'; // discard-only
  return null;
}
