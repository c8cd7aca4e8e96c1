// The team store's connection pool when the server goes away between two statements of a transaction: a typed error
// for the statement that follows, never an 'error' event that ends the process.
import { describe, expect, it } from 'vitest';
import { storeConnection } from '../../src/stores/postgres/connection.js';
import { StorePool } from '../../src/stores/postgres/pool.js';
import { ownServer } from '../helpers/postgres.js';
import { nextEvent } from '../helpers/wait.js';

describe('a session the server ends between two statements', () => {
  it('fails the next statement with E_STORE_UNAVAILABLE; the process goes on', async () => {
    const server = await ownServer();
    if (!server) return; // (no PostgreSQL programs: test/team says the half was skipped)
    const pool = await StorePool.open(storeConnection(server.url, {}, '/nonexistent'));
    try {
      const failed = pool.transaction('testing', async (c) => {
        await c.query('SELECT 1');
        const dropped = nextEvent(c, 'error', () => true, { what: "the server's terminating connection" });
        await server.stop();
        await dropped; // it arrived while no statement was running
        await c.query('SELECT 2');
      });
      await expect(failed).rejects.toMatchObject({ code: 'E_STORE_UNAVAILABLE' });
      await server.start();
      // The broken session is not handed out again.
      expect(await pool.query('testing', 'SELECT 3 AS n')).toEqual([{ n: 3 }]);
    } finally {
      await pool.close();
      await server.close();
    }
  }, 60_000);
});
