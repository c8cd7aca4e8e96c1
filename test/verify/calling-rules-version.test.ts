// verify, report and window name the calling rules' version a results file was written with, when its manifest has
// it (`calling_rules_version`, top-level), and say "not recorded" otherwise.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rewriteOutputAndManifest } from '../helpers/forged-output.js';
import { dnc, US_LIST, world, type World } from '../helpers/world.js';

let w: World;
let output: string;
const VERSION = 'dnc-rules/2026.12.1 tzdata/2025c date-holidays/3.37.0 libphonenumber/9.0.27';

beforeAll(async () => {
  w = await world();
  const input = w.file('calls.csv', US_LIST);
  output = path.join(w.dir, 'calls.results.csv');
  const b = await dnc(['batch', input, '-o', output], w.env);
  expect(b.code, b.stderr).toBe(0);
});
afterAll(async () => {
  await w.cleanup();
});

/** What verify, report and window say of the rules' version, human and --json. */
async function said() {
  const verify = await dnc(['verify', output], w.env);
  const verifyJson = JSON.parse((await dnc(['--json', 'verify', output], w.env)).stdout);
  const html = path.join(w.dir, 'report.html');
  const report = JSON.parse((await dnc(['--json', 'report', output, '-o', html], w.env)).stdout);
  const slot = ['--from', '2026-07-01T14:00:00Z', '--until', '2026-07-01T15:00:00Z'];
  const dial = ['--dial-out', path.join(w.dir, 'slot.txt')];
  const window = JSON.parse((await dnc(['--json', 'window', output, ...slot, ...dial], w.env)).stdout);
  expect([verify.code, verifyJson.fit, window.written]).toEqual([0, true, 2]);
  const rulesRow = /<dt>Calling rules<\/dt>\s*<dd>(.*?)<\/dd>/.exec(readFileSync(html, 'utf8'))?.[1];
  return {
    line: verify.stdout.split('\n').find((l) => l.startsWith('  calling ')),
    json: [verifyJson.calling_rules_version, report.calling_rules_version, window.file_rules_version],
    html: rulesRow,
  };
}

describe('the calling rules a results file was written with', () => {
  it('named as the batch that wrote the calling columns recorded them', async () => {
    expect(JSON.parse(readFileSync(output.replace(/\.csv$/, '.manifest.json'), 'utf8')).calling_rules_version).toBe(
      VERSION,
    );
    expect(await said()).toEqual({
      line: `  calling    rules ${VERSION}`,
      json: [VERSION, VERSION, VERSION],
      html: `<code>${VERSION}</code>`,
    });
  });

  it('not recorded by a manifest without them', async () => {
    // As a manifest of an earlier dnc (the file and the state folder's anchor of its manifest rewritten to agree).
    rewriteOutputAndManifest(output, readFileSync(output, 'utf8'), (m) => delete m.calling_rules_version, w.stateDir);
    expect(await said()).toEqual({
      line: '  calling    rules not recorded',
      json: [null, null, null],
      html: '<span class="muted">not recorded</span>',
    });
  });

  it('named when the manifest records them', async () => {
    // As the batch that writes the calling columns leaves it: the manifest (and the state folder's anchor of it).
    rewriteOutputAndManifest(
      output,
      readFileSync(output, 'utf8'),
      (m) => (m.calling_rules_version = VERSION),
      w.stateDir,
    );
    expect(await said()).toEqual({
      line: `  calling    rules ${VERSION}`,
      json: [VERSION, VERSION, VERSION],
      html: `<code>${VERSION}</code>`,
    });
  });
});
