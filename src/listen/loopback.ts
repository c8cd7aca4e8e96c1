// Which addresses only this machine can reach: `dnc listen` needs --path on any other.
import { BlockList, isIP } from 'node:net';

/** 127.0.0.0/8 and ::1 (an IPv4-mapped ::ffff:127.x.y.z is matched against the IPv4 rule by BlockList). */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8, ::1 and localhost: only this machine can connect. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  const family = isIP(h);
  return family === 4 ? LOOPBACK.check(h, 'ipv4') : family === 6 ? LOOPBACK.check(h, 'ipv6') : false;
}
