// The account a store's rows belong to, without the key: a salted HMAC of the API key, the salt kept by the store.
import { createHmac, randomBytes } from 'node:crypto';

/** A new salt (made once per store, when it is created). */
export function newSalt(): string {
  return randomBytes(32).toString('hex');
}

/**
 * HMAC-SHA256 of the key under the store's salt, hex. The same key gives the same account in one store (so the team's
 * machines share its verdicts and claims), and a value that says nothing outside it: without the salt it cannot be
 * matched against a list of keys, and two stores give one key two unrelated accounts.
 */
export function accountOf(salt: string, apiKey: string): string {
  return createHmac('sha256', salt).update(apiKey, 'utf8').digest('hex');
}
