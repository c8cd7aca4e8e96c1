// The description's webhook_url rule (4.1, 6), shared by the client (checked before spending) and the sandbox.
import { describe, expect, it } from 'vitest';
import { privateHostKind, webhookUrlProblem } from '../../src/wire/webhook-url.js';

describe('webhook_url: public hosts only', () => {
  it.each([
    ['hooks.example.com', null],
    ['8.8.8.8', null],
    ['[2606:4700::1111]', null],
    ['[64:ff9b::808:808]', null], // NAT64 of a public IPv4 address
    ['127.0.0.1', 'loopback'],
    ['[::1]', 'loopback'],
    ['localhost', 'loopback'],
    ['[::ffff:127.0.0.1]', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'], // the same, as URL parsing writes it
    ['[0:0:0:0:0:ffff:7f00:0001]', 'loopback'],
    ['[64:ff9b::7f00:1]', 'loopback'],
    ['[::127.0.0.1]', 'loopback'],
    ['[::ffff:10.0.0.1]', 'private'],
    ['[::ffff:a9fe:a9fe]', 'link-local'], // 169.254.169.254, the cloud metadata address
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['[fd00::1]', 'private'],
    ['[fec0::1]', 'private'],
    ['169.254.169.254', 'link-local'],
    ['[fe80::1]', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['[::]', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['[ff02::1]', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['[::808:808]', 'reserved'], // IPv4-compatible (deprecated), even of a public address
    ['192.0.2.1', 'documentation'],
    ['203.0.113.7', 'documentation'],
    ['[2001:db8::1]', 'documentation'],
  ])('%s → %s', (host, kind) => {
    const url = `https://${host}/hook`;
    expect(privateHostKind(new URL(url).hostname.replace(/^\[|\]$/g, ''))).toBe(kind);
    const problem = webhookUrlProblem(url);
    if (kind === null) expect(problem).toBeNull();
    else expect(problem).toBe(`its host ${new URL(url).hostname} is a ${kind} address; the service pushes only to public hosts`);
  });

  it.each(['printer.local', 'hooks.internal', 'a.test', 'x.invalid', 'router.home.arpa', 'nas.lan', 'erp.corp', 'intranet', 'x'])(
    'a name no public DNS answers for (%s) is refused, and allowed with allowInsecure',
    (host) => {
      expect(webhookUrlProblem(`https://${host}/hook`)).toBe(`its host ${host} is not a public name (a reserved suffix or a single label); the service pushes only to public hosts`);
      expect(webhookUrlProblem(`https://${host}/hook`, { allowInsecure: true })).toBeNull();
    },
  );

  it('https:///x has no host of its own: read as the single label "x", refused', () => {
    expect(webhookUrlProblem('https:///x')).toContain('its host x is not a public name');
  });

  it('loopback only, and http, with allowInsecure (dnc sandbox --allow-insecure-webhooks)', () => {
    expect(webhookUrlProblem('http://[::ffff:7f00:1]:8080/hook', { allowInsecure: true })).toBeNull();
    expect(webhookUrlProblem('http://[::ffff:10.0.0.1]:8080/hook', { allowInsecure: true })).toContain('private address');
  });
});
