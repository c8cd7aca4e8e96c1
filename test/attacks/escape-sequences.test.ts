// Escape sequences from outside (the service, a push, a CSV cell, a file's name) never reach the terminal raw.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OWN_SGR } from '../../src/text/colour.js';
import { terminalSafe, terminalSafeLines } from '../../src/text/terminal-safe.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runDnc } from '../helpers/cli.js';
import { US_LIST, world } from '../helpers/world.js';
import { listen, post, readCsv, scratchHome, succeededPush, webhookBatch, type WebhookBatch } from './helpers.js';

// Retitle the window, clear the screen, return to the line start and print a fake verdict, ring the bell, reorder text.
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\r✓ callable  +15555550100\u009b31m\u202e';
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;

let sb: Sandbox | undefined;
let batch: WebhookBatch | undefined;
let home: string | undefined;
afterEach(async () => {
  await sb?.close();
  await batch?.cleanup();
  if (home) rmSync(home, { recursive: true, force: true });
  sb = batch = home = undefined;
});

/** Colour sequences dnc writes itself are allowed; nothing else that a terminal would act on. */
function expectTerminalSafe(text: string): void {
  const withoutColour = text.replace(/\u001b\[[0-9;]*m/g, '');
  expect(withoutColour).not.toMatch(RAW);
}

describe('terminal-safe text', () => {
  it('escapes every control character of a value, and keeps only line breaks and colour in a line dnc composed', () => {
    expect(terminalSafe(HOSTILE)).toBe('\\e]0;pwned\\x07\\e[2J\\r✓ callable  +15555550100\\x9b31m\\u202e');
    expect(terminalSafeLines(`\u001b[1mbold\u001b[0m\nnext\t${HOSTILE}`)).toBe(
      `\u001b[1mbold\u001b[0m\nnext\t${terminalSafe(HOSTILE)}`,
    );
  });

  it('a table cell, boxed on a terminal and tab-separated when piped; dnc own colour kept', async () => {
    const { renderTable, paint } = await import('../../src/render/table.js');
    for (const tty of [true, false]) {
      const out = renderTable(
        {
          head: ['country', 'name'],
          rows: [
            ['AU', HOSTILE],
            [paint(true, 'bold', 'GB'), 'plain'],
          ],
        },
        { tty, color: true, columns: 200 },
      );
      expectTerminalSafe(out);
      expect(out).toContain('\\e]0;pwned');
      if (tty) expect(out).toContain('\u001b[1mGB');
    }
  });

  it('a customer name from the service, on a terminal and piped', async () => {
    sb = await startSandbox({ port: 0, accounts: [{ key: 'sbx_hostile_0001', customerName: HOSTILE }] });
    const env = { DNC_BASE_URL: sb.baseUrl, DNC_API_KEY: 'sbx_hostile_0001' };
    for (const tty of [true, false]) {
      for (const argv of [['usage'], ['usage', '--lifetime']]) {
        const r = await runDnc(argv, { env, tty });
        expect(r.code, r.stderr).toBe(0);
        expectTerminalSafe(r.stdout);
        expectTerminalSafe(r.stderr);
        expect(r.stdout).toContain('\\e]0;pwned\\x07');
      }
    }
  });

  it('a CSV cell quoted in an error', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-escape-'));
    try {
      writeFileSync(path.join(dir, 'calls.csv'), `name,phone\na,"+1 202 ${HOSTILE}"\n`);
      const r = await runDnc(['batch', 'calls.csv', '-o', 'out.csv', '--dry-run'], {
        cwd: dir,
        env: { DNC_BASE_URL: 'http://127.0.0.1:9', DNC_API_KEY: 'k-123456' },
      });
      expectTerminalSafe(r.stderr);
      expectTerminalSafe(r.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('colour and conceal codes in a CSV header quoted in an error hint are escaped too (an error has no colour of ours)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-escape-'));
    try {
      writeFileSync(path.join(dir, 'calls.csv'), 'na\u001b[31mme,ph\u001b[8mone\nAnn,+12025550100\n');
      const r = await runDnc(['batch', 'calls.csv', '--column', 'mobile', '--dry-run'], {
        cwd: dir,
        env: { DNC_BASE_URL: 'http://127.0.0.1:9', DNC_API_KEY: 'k-123456' },
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('columns are 1:na\\e[31mme, 2:ph\\e[8mone');
      expect(r.stderr).not.toContain('\u001b');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a hostile push: its path, headers and fields in the refusal lines', async () => {
    batch = await webhookBatch([['au', '+61 4 1234 5093']]);
    home = scratchHome();
    const row = readCsv(batch.output)[0]!;
    const l = listen(['--results', batch.output, '--port', '0', '--verbose'], { cwd: batch.dir, home });
    const url = await l.url;
    // Control characters cannot be sent raw in a header or a path; in a body (and so in a refusal reason) they can.
    expect((await post(url, succeededPush(row, { phone_number: `+61412345093${HOSTILE}` }))).status).toBe(422);
    expect(
      (
        await post(url, succeededPush(row, { correlation_id: `${row.dnc_correlation_id}${HOSTILE}` }), {
          'x-service-correlation-id': row.dnc_correlation_id,
        })
      ).status,
    ).toBe(400);
    expect((await post(url, succeededPush(row, { dnc_list_source: `https://x.example/${HOSTILE}` }))).status).toBe(422);
    l.interrupts.fire();
    await l.exit;
    expect(l.io.err()).toContain('\\e]0;pwned');
    expectTerminalSafe(l.io.err());
    expectTerminalSafe(l.io.out());
  });

  it("a file's name with ESC, OSC 52 and C1: escaped whole in batch, verify, status, report and usage --reconcile", async () => {
    const w = await world();
    try {
      // Conceal the rest of the line, write the clipboard (OSC 52), and a C1 CSI: what a name must never do.
      const name = 'calls\u001b[8m\u001b]52;c;ZXZpbA==\u0007\u009b2J';
      const input = w.file(`${name}.csv`, US_LIST);
      const output = path.join(w.dir, `${name}.results.csv`);
      const env = { ...w.env, USER: 'ann' };
      const shown = '\\e[8m\\e]52;c;ZXZpbA==\\x07\\x9b2J';
      const batch = await runDnc(['batch', input, '-o', output], { env, cwd: w.dir, tty: true });
      expect(batch.code, batch.stderr).toBe(0);
      // Tampered after: every command that judges the file must be able to say NOT FIT where the name stood.
      const results = readFileSync(output, 'utf8');
      expect(results).toContain(',do_not_call,');
      writeFileSync(output, results.replace(',do_not_call,', ',callable,'));
      const runs = {
        batch,
        verify: await runDnc(['verify', output], { env, cwd: w.dir }),
        status: await runDnc(['status', w.dir], { env, cwd: w.dir, tty: true }),
        report: await runDnc(['report', output], { env, cwd: w.dir }),
        reconcile: await runDnc(['usage', '--reconcile'], { env, cwd: w.dir }),
      };
      for (const [command, r] of Object.entries(runs)) {
        for (const text of [r.stdout, r.stderr]) {
          const withoutOwnColour = [...OWN_SGR].reduce((t, sgr) => t.replaceAll(sgr, ''), text);
          expect(withoutOwnColour, `${command}: ${text}`).not.toMatch(/[\u001b\u0007\u009b]/);
        }
        expect(r.stdout + r.stderr, command).toContain(shown);
      }
      expect(runs.verify.stdout).toMatch(/2J\.results\.csv: NOT FIT TO DIAL/);
      expect(runs.status.stderr).toMatch(/2J\.results\.csv is not fit to dial/);
      expect(runs.report.stderr).toMatch(/2J\.results\.csv is not fit to dial/);
    } finally {
      await w.cleanup();
    }
  });
});
