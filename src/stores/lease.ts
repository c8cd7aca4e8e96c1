// The lease of a claim in a team store: how long a claimant that gives no answer is waited for.

/**
 * How long a claim holds without an answer: as long as one lookup may take (every attempt at --timeout, the backoff
 * between them at its 8 s ceiling) and a margin of 5 s. Then the claimant is taken to be gone.
 */
export function claimLeaseMs(timeoutMs: number, retries: number): number {
  return (retries + 1) * timeoutMs + retries * 8_000 + 5_000;
}
