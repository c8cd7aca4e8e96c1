// The lease of a claim in a team store: how long a claimant that gives no answer is waited for.

/**
 * How long a claim holds without an answer: as long as one lookup may take (every attempt at --timeout, the backoff
 * between them at its 8 s ceiling) and a margin of 5 s. Then the claimant is taken to be gone.
 */
export function claimLeaseMs(timeoutMs: number, retries: number): number {
  return (retries + 1) * timeoutMs + retries * 8_000 + 5_000;
}

/**
 * A member's lease in the team store: a member whose heartbeat has not renewed it for this long is taken to be gone
 * (a killed process is known at once by its advisory lock; this is for a machine cut off from the store).
 */
export const MEMBER_LEASE_MS = 15_000;

/** How often a member renews its lease, and reaps the claims of members gone: three beats a lease. */
export const HEARTBEAT_MS = 5_000;
