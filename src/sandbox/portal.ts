// Portal JWTs for /v2/usage_stats (section 5): HS256 tokens the sandbox issues itself and verifies.
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface PortalClaims {
  /** Index of the account (organization) the token belongs to. */
  org: number;
  /** Expiry, seconds since the epoch. */
  exp: number;
  email_verified: boolean;
  /** Active organization membership. */
  membership: boolean;
}

export interface PortalTokenOptions {
  /** Seconds until expiry (negative: already expired). Default 3600. */
  expiresIn?: number;
  verified?: boolean;
  membership?: boolean;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

/** Does this bearer value have the shape of a JWT (rather than an API key)? */
export function looksLikeJwt(value: string): boolean {
  return /^eyJ[\w-]*\.[\w-]+\.[\w-]+$/.test(value);
}

export function signPortalToken(secret: string, claims: PortalClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${HEADER}.${payload}`).digest('base64url');
  return `${HEADER}.${payload}.${signature}`;
}

/**
 * The claims of a token signed by this sandbox, or why it is refused: 'invalid' (bad signature
 * or shape), 'expired', 'unverified' (all 401) or 'no_membership' (403).
 */
export function verifyPortalToken(
  secret: string,
  token: string,
  nowMs: number,
): PortalClaims | 'invalid' | 'expired' | 'unverified' | 'no_membership' {
  const [header, payload, signature] = token.split('.');
  if (!header || !payload || !signature) return 'invalid';
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  let claims: PortalClaims;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as PortalClaims;
  } catch {
    return 'invalid';
  }
  if (typeof claims.exp !== 'number' || claims.exp * 1000 <= nowMs) return 'expired';
  if (claims.email_verified !== true) return 'unverified';
  if (claims.membership !== true) return 'no_membership';
  return claims;
}
