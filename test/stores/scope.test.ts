// The account a store keeps a scope's rows under: the key's salted HMAC, else the one a batch recorded for the store.
// Neither known (dnc listen with no key, a journal that recorded no account) is the user's to fix: a typed error.
import { describe, expect, it } from 'vitest';
import { accountOf } from '../../src/stores/account.js';
import { scopeAccount } from '../../src/stores/interfaces.js';

describe('scopeAccount', () => {
  it("is the key's HMAC under the store's salt, else the account recorded for the store's place", () => {
    expect(scopeAccount({ service: 's', apiKey: 'k' }, 'salt', '/c', accountOf)).toBe(accountOf('salt', 'k'));
    expect(scopeAccount({ service: 's', accounts: { '/c': 'acct' } }, 'salt', '/c', accountOf)).toBe('acct');
  });

  it('without either is E_CONFIG_MISSING (exit 2) naming the place, never a plain Error', () => {
    const scope = { service: 's', accounts: { '/elsewhere': 'acct' } };
    expect(() => scopeAccount(scope, 'salt', '/c', accountOf)).toThrow(
      expect.objectContaining({
        code: 'E_CONFIG_MISSING',
        exitCode: 2,
        message: expect.stringContaining('records no account for /c'),
      }),
    );
  });
});
