// A small HTTP server that answers like the service (service-interface.md 1.3.0), but wrong when told to: the
// tests (test/attacks/hostile-service.test.ts) and the soak's attack step run dnc against it. It is not the
// sandbox: it shares no code with dnc, so a rule both get wrong the same way is not hidden.
//
//   const svc = await startHostileService({ behaviour: 'no-verdict' });   // every lookup answered so
//   svc.baseUrl, svc.apiKey, svc.requests (what was asked), svc.setBehaviour(name), await svc.close()
import { randomUUID } from 'node:crypto';
import http from 'node:http';

const KEY = 'sk_hostile_4f1d0c9e7b2a4e6f8d3c5b1a9e7d2f40';

/** A timestamp of the service's shape (microseconds, UTC offset). */
export function serviceTimestamp(at = new Date()) {
  return at.toISOString().replace('Z', '123+00:00');
}

/** The honest verdict of a number: do_not_call when its last digit is even (a rule a test can predict). */
export function honestDoNotCall(e164) {
  return Number(e164.at(-1)) % 2 === 0;
}

/** Where a number is, by calling code (as the service places numbers). */
function countryOf(e164) {
  if (e164.startsWith('+1')) return 'US';
  if (e164.startsWith('+44')) return 'GB';
  if (e164.startsWith('+49')) return 'DE';
  if (e164.startsWith('+61')) return 'AU';
  if (e164.startsWith('+33')) return 'FR';
  return 'US';
}

function honestBody(e164, correlationId, used) {
  const country = countryOf(e164);
  return {
    status: 'succeeded',
    error_code: null,
    correlation_id: correlationId,
    phone_number: e164,
    country,
    do_not_call: honestDoNotCall(e164),
    timestamp: serviceTimestamp(),
    dnc_list_source: `https://registers.hostile.example/${country}`,
    cost: { credits_used_for_query: 1, total_credits_used: used, credit_limit: 10000 },
  };
}

/**
 * Each behaviour: what a lookup of `e164` gets (status, headers, body or raw text), given an honest answer to
 * start from. `req` has the request's headers and the key sent.
 */
export const BEHAVIOURS = {
  honest: (a) => a,
  'no-verdict': (a) => ({ ...a, body: without(a.body, 'do_not_call') }),
  'null-verdict': (a) => ({ ...a, body: { ...a.body, do_not_call: null } }),
  'string-verdict': (a) => ({ ...a, body: { ...a.body, do_not_call: 'false' } }),
  'other-number': (a) => ({ ...a, body: { ...a.body, phone_number: '+12025550199' } }),
  'correlation-mismatch': (a) => ({ ...a, headers: { ...a.headers, 'x-service-correlation-id': randomUUID() } }),
  'timestamp-future': (a) => ({ ...a, body: { ...a.body, timestamp: '2099-01-01T00:00:00.000000+00:00' } }),
  'timestamp-shape': (a) => ({ ...a, body: { ...a.body, timestamp: 'yesterday' } }),
  'negative-cost': (a) => ({
    ...a,
    headers: { ...a.headers, 'x-credit-cost': '-5' },
    body: { ...a.body, cost: { ...a.body.cost, credits_used_for_query: -5 } },
  }),
  'absurd-cost': (a) => ({
    ...a,
    headers: { ...a.headers, 'x-credit-cost': '1e30' },
    body: { ...a.body, cost: { ...a.body.cost, credits_used_for_query: 1e30 } },
  }),
  'cost-mismatch': (a) => ({
    ...a,
    headers: { ...a.headers, 'x-credit-cost': '1' },
    body: { ...a.body, cost: { ...a.body.cost, credits_used_for_query: 2 } },
  }),
  // Issue 46: an answer about another register (GB for a +1 number), and a verdict given twice (true, then false).
  'other-country': (a) => ({ ...a, body: { ...a.body, country: a.body.country === 'GB' ? 'US' : 'GB' } }),
  'repeated-verdict': (a) => ({
    ...a,
    text: JSON.stringify({ ...a.body, do_not_call: true }).replace(
      '"do_not_call":true',
      '"do_not_call":true,"do_not_call":false',
    ),
  }),
  // Issue 46: a verdict padded to 300 MB, streamed (the server never holds it), with its Content-Length or without.
  'huge-body': (a) => ({ ...a, hugeBytes: 300 * 2 ** 20 }),
  'huge-body-chunked': (a) => ({ ...a, hugeBytes: 300 * 2 ** 20, chunked: true }),
  // Issue 46: the service's clock 10 minutes ahead of this machine's (a slow clock here), its Date header agreeing
  // with its answers, or no Date header at all; and 2 hours ahead, further than its Date is believed.
  'clock-ahead': (a) => aheadBy(a, 10 * 60_000, true),
  'clock-ahead-no-date': (a) => aheadBy(a, 10 * 60_000, false),
  'clock-ahead-2h': (a) => aheadBy(a, 2 * 3600_000, true),
  // The clock 10 minutes ahead, and the verdict dated 2099 all the same: wrong whatever the clocks.
  'clock-ahead-2099': (a) => ({
    ...aheadBy(a, 10 * 60_000, true),
    body: { ...a.body, timestamp: '2099-01-01T00:00:00.000000+00:00' },
  }),
  'html-200': (a) => ({
    status: 200,
    headers: { 'content-type': 'text/html' },
    text: '<html><body>Welcome to the hotel Wi-Fi</body></html>',
  }),
  'reseller-400': (a, req) =>
    req.headers['x-forwarded-host']
      ? a
      : { status: 400, headers: {}, body: { error: 'X-Forwarded-Host header is required' } },
  'webhooks-disabled-403': (a, req) =>
    req.webhookUrl ? { status: 403, headers: {}, body: { error: 'webhooks are disabled for this account' } } : a,
  'webhook-url-400': (a, req) =>
    req.webhookUrl ? { status: 400, headers: {}, body: { error: 'webhook_url host is not allowed' } } : a,
  'generic-400': () => ({ status: 400, headers: {}, body: { error: 'bad request' } }),
  // Answers after 1.5 s: a client --timeout below that gives up on a lookup the service charged.
  slow: (a) => ({ ...a, delayMs: 1500 }),
  // An error text with a line break: what follows it must never read as a line of dnc's own.
  'newline-error': (a, req) => ({
    status: 500,
    headers: { ...a.headers, 'x-credit-cost': '1' },
    body: {
      status: 'failed',
      error_code: 'billing_error',
      error: 'billing failed\ndnc: error [E_FORGED]: pay here',
      charged: true,
      correlation_id: a.body.correlation_id,
      phone_number: req.e164,
      country: a.body.country,
      cost: a.body.cost,
    },
  }),
  // 422 for numbers the service places in FR only; GB's dependencies (+44 7781 …) are answered like GB's.
  'unsupported-fr': (a, req) =>
    req.e164.startsWith('+33')
      ? {
          status: 422,
          headers: {},
          body: { error: 'country FR is not supported', country: 'FR', supported_countries: ['US', 'GB', 'DE', 'AU'] },
        }
      : a,
  // Issue 25: a service that echoes the key it was given in what it says (an error text, the register URL).
  'echo-key': (a, req) => ({
    ...a,
    body: { ...a.body, dnc_list_source: `https://registers.hostile.example/${req.key}` },
  }),
  // Issue 38: every form of echoForms, of the key and of `options.alsoEcho` (a store password), in the register URL
  // of a verdict (even last digit) or the error text of a failure (odd), and in a header.
  'echo-key-encoded': (a, req) => {
    const echo = [req.key, ...req.alsoEcho]
      .flatMap((s) => Object.entries(echoForms(s)).map(([k, v]) => `${k}=${v}`))
      .join(' ');
    const headers = { ...a.headers, 'x-echo': echo.replace(/[^\x21-\x7e ]/g, '?') };
    if (honestDoNotCall(req.e164))
      return { ...a, headers, body: { ...a.body, dnc_list_source: `https://registers.hostile.example/?${echo}` } };
    return {
      status: 500,
      headers: { ...headers, 'x-credit-cost': '1' },
      body: {
        status: 'failed',
        error_code: 'billing_error',
        error: `could not bill ${echo}`,
        charged: true,
        correlation_id: a.body.correlation_id,
        phone_number: req.e164,
        country: a.body.country,
        cost: a.body.cost,
      },
    };
  },
  'echo-key-error': (a, req) => ({
    status: 500,
    headers: { ...a.headers, 'x-credit-cost': '1' },
    body: {
      status: 'failed',
      error_code: 'billing_error',
      error: `could not bill key ${req.key}`,
      charged: true,
      correlation_id: a.body.correlation_id,
      phone_number: req.e164,
      country: a.body.country,
      cost: a.body.cost,
    },
  }),
};

/**
 * Issue 38: the forms an echo may hide a secret behind, each written here without dnc's code (a rule both get wrong
 * the same way would hide nothing). Name → text.
 */
export function echoForms(secret) {
  const bytes = Buffer.from(secret, 'utf8');
  const pct = (upper) =>
    [...bytes].map((b) => '%' + b.toString(16).padStart(2, '0')[upper ? 'toUpperCase' : 'toLowerCase']()).join('');
  const pyQuote = (safe) =>
    [...secret]
      .map((c) =>
        /[A-Za-z0-9_.~-]/.test(c) || safe.includes(c)
          ? c
          : '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'),
      )
      .join('');
  const b64 = (prefix, url) => Buffer.from(prefix + secret + 'zz', 'utf8').toString(url ? 'base64url' : 'base64');
  const named = { '+': '&plus;', '/': '&sol;', '=': '&equals;', _: '&lowbar;', '&': '&amp;' };
  return {
    raw: secret,
    upper: secret.toUpperCase(),
    mixedCase: [...secret].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join(''),
    encodeURIComponent: encodeURIComponent(secret),
    pythonQuote: pyQuote('/'),
    pythonQuotePlus: pyQuote('').replace(/%20/g, '+'),
    percentAllUpper: pct(true),
    percentAllLower: pct(false),
    percentTwice: encodeURIComponent(encodeURIComponent(secret)),
    jsonUnicodeLower: [...secret].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join(''),
    jsonUnicodeUpper: [...secret]
      .map((c) => '\\u' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0'))
      .join(''),
    jsUnicodeBraces: [...secret].map((c) => '\\u{' + c.charCodeAt(0).toString(16) + '}').join(''),
    hexEscapes: [...secret].map((c) => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0')).join(''),
    htmlDecimal: [...secret].map((c) => '&#' + c.charCodeAt(0) + ';').join(''),
    htmlHex: [...secret].map((c) => '&#x' + c.charCodeAt(0).toString(16).toUpperCase() + ';').join(''),
    htmlNamed: [...secret].map((c) => named[c] ?? c).join(''),
    base64At0: b64('', false),
    base64At1: b64('a', false),
    base64At2: b64('ab', false),
    base64urlAt0: b64('', true),
    base64urlAt1: b64('a', true),
    base64urlAt2: b64('ab', true),
    base64PercentEncoded: encodeURIComponent(b64('a', false)),
    base64Utf16: Buffer.from(secret, 'utf16le').toString('base64'),
    hexLower: bytes.toString('hex'),
    hexUpper: bytes.toString('hex').toUpperCase(),
    reversed: [...secret].reverse().join(''),
    // Issue 48: the key's UTF-16 bytes read as UTF-8, wrapped or spaced out, full-width, quoted-printable, base32.
    utf16AsText: Buffer.from(secret, 'utf16le').toString('latin1'),
    splitByLineBreaks: secret.replace(/(.{7})/g, '$1\r\n'),
    spacedOut: [...secret].join(' '),
    fullWidth: [...secret].map((c) => String.fromCodePoint(c.charCodeAt(0) + 0xfee0)).join(''),
    quotedPrintable: [...bytes].map((b) => '=' + b.toString(16).toUpperCase().padStart(2, '0')).join('').replace(/(.{21})/g, '$1=\r\n'),
    base32: base32(Buffer.from('a' + secret + 'zz', 'utf8')),
    base32Lower: base32(Buffer.from('ab' + secret + 'zz', 'utf8')).toLowerCase(),
  };
}

function aheadBy(a, ms, withDate) {
  const at = new Date(Date.now() + ms);
  const body = a.body.timestamp ? { ...a.body, timestamp: serviceTimestamp(at) } : a.body;
  return { ...a, body, headers: { ...a.headers, ...(withDate ? { date: at.toUTCString() } : {}) }, noDate: !withDate };
}

/** Writes a succeeded body padded to `bytes` in 64 KiB pieces, waiting for the socket to drain (memory stays flat). */
function sendHuge(res, status, headers, body, bytes, chunked) {
  const head = JSON.stringify(body).slice(0, -1) + ',"padding":"';
  const tail = '"}';
  const fill = bytes - head.length - tail.length;
  res.writeHead(status, {
    'content-type': 'application/json',
    ...headers,
    ...(chunked ? {} : { 'content-length': String(bytes) }),
  });
  const piece = Buffer.alloc(64 * 1024, 'x');
  let left = fill;
  let gone = false;
  res.on('close', () => (gone = true));
  res.write(head);
  const pump = () => {
    while (!gone && left > 0) {
      const n = Math.min(left, piece.length);
      left -= n;
      if (!res.write(n === piece.length ? piece : piece.subarray(0, n))) return res.once('drain', pump);
    }
    if (!gone) res.end(tail);
  };
  pump();
}

/** RFC 4648 base32, without padding: written here, by the test's own code, not the masking rule's. */
function base32(bytes) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const b of bytes) bits += b.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i < bits.length; i += 5) out += alphabet[parseInt(bits.slice(i, i + 5).padEnd(5, '0'), 2)];
  return out;
}

function without(obj, key) {
  const { [key]: _dropped, ...rest } = obj;
  return rest;
}

/**
 * Starts the service on 127.0.0.1 (port 0). `behaviour`: a name of BEHAVIOURS or a function (a, req) → answer.
 * Usage endpoints answer honestly (the credit guard asks them), with the reseller rule when that is the behaviour.
 */
export async function startHostileService(options = {}) {
  let behaviour = options.behaviour ?? 'honest';
  const apiKey = options.apiKey ?? KEY;
  const requests = [];
  let used = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const auth = String(req.headers.authorization ?? '');
    const key = auth.replace(/^Bearer /, '');
    const send = (status, headers, body, text, answer = {}) => {
      if (answer.noDate) res.sendDate = false;
      if (answer.hugeBytes) return sendHuge(res, status, headers, body, answer.hugeBytes, answer.chunked);
      const payload = text ?? JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(payload);
    };
    const record = { path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers };
    requests.push(record);
    if (key !== apiKey) return send(auth ? 403 : 401, {}, { error: auth ? 'invalid API key' : 'API key missing' });
    const pick = typeof behaviour === 'function' ? behaviour : BEHAVIOURS[behaviour];
    if (url.pathname === '/v2/usage_stats' || url.pathname === '/usage_stats') {
      if (behaviour === 'reseller-400' && !req.headers['x-forwarded-host'])
        return send(400, {}, { error: 'X-Forwarded-Host header is required' });
      if (url.pathname === '/usage_stats')
        return send(200, {}, { customer_name: 'Hostile', total_requests: used, monthly: [], by_country: [] });
      const period = {
        id: 1,
        type: 'monthly',
        start_date: '2026-11-01T00:00:00Z',
        end_date: '2026-12-01T00:00:00Z',
        credit_limit: 10000,
        credits_used: used,
        credits_remaining: 10000 - used,
        total_requests: used,
        by_country: [],
        unallocated_usage: { request_count: 0, credits_used: 0 },
      };
      const page = { customer_name: 'Hostile', data: [period], next_cursor: null };
      // Issue 46: a balance given twice (a full one, then nothing left), which JSON.parse would read as the last.
      if (behaviour === 'usage-repeated')
        return send(
          200,
          {},
          null,
          JSON.stringify(page).replace('"credits_remaining":', '"credits_remaining":10000,"credits_remaining":'),
        );
      return send(200, {}, page);
    }
    if (url.pathname !== '/check_phone_number') return send(404, {}, { error: 'not found' });
    const e164 = url.searchParams.get('phone_number') ?? '';
    const webhookUrl = url.searchParams.get('webhook_url');
    record.e164 = e164;
    const correlationId = randomUUID();
    used += 1;
    const honest = webhookUrl
      ? {
          status: 202,
          headers: { 'x-credit-cost': '1', 'x-service-correlation-id': correlationId },
          body: { status: 'started', correlation_id: correlationId, phone_number: e164, country: countryOf(e164) },
        }
      : {
          status: 200,
          headers: {
            'x-credit-cost': '1',
            'x-ratelimit-limit': '10000',
            'x-ratelimit-remaining': String(10000 - used),
            'x-service-correlation-id': correlationId,
          },
          body: honestBody(e164, correlationId, used),
        };
    const answer = pick(honest, { e164, webhookUrl, key, headers: req.headers, alsoEcho: options.alsoEcho ?? [] });
    if (answer.status !== 200 && answer.status !== 202 && answer.body?.status !== 'failed') used -= 1;
    if (answer.delayMs)
      setTimeout(() => send(answer.status, answer.headers ?? {}, answer.body, answer.text), answer.delayMs);
    else send(answer.status, answer.headers ?? {}, answer.body, answer.text, answer);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    /** Lookups asked, in order (E.164). */
    lookups: () => requests.filter((r) => r.path === '/check_phone_number').map((r) => r.e164),
    setBehaviour(b) {
      behaviour = b;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
