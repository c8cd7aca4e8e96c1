// `dnc window --number N…`: each number's calling window at an instant, with nothing looked up and no credit spent.
import { showSaid, type Context } from '../context.js';
import { ExitCode } from '../errors.js';
import { writeLine } from '../io.js';
import { callingLines } from '../render/calling.js';
import { paint } from '../text/colour.js';
import { formatInteger } from '../text/numbers.js';
import { terminalSafe } from '../text/terminal-safe.js';
import type { NumberWindow, NumberWindowEvent, NumberWindowOptions } from '../window/numbers.js';

/** Runs the window-only question; exit 0, or 3 when a number given cannot be valid (every number is answered). */
export async function runNumberWindowCommand(ctx: Context, options: NumberWindowOptions): Promise<number> {
  const [{ runNumberWindows }, records] = await Promise.all([
    import('../window/numbers.js'),
    import('../render/check-records.js'),
  ]);
  let blocks = 0;
  const print = (lines: readonly string[]) => {
    if (!ctx.json && blocks++ > 0) writeLine(ctx.io.stdout, '');
    for (const line of lines) writeLine(ctx.io.stdout, line);
  };
  const result = await runNumberWindows(
    ctx.deps({
      onEvent: (e: NumberWindowEvent) => {
        if (showSaid(ctx, e)) return;
        const a = e.answer;
        if (a.problem !== null) ctx.warn(`dnc: ${terminalSafe(a.problem)}`);
        if (ctx.json) print([JSON.stringify(numberJson(a, records.suppressedJson))]);
        else print(numberLines(a, ctx.io.stdoutColor, ctx.io.stdoutIsTTY, records.suppressedLines));
      },
    }),
    options,
  );
  const n = formatInteger;
  const parts = [
    `${n(result.numbers)} number(s) at ${result.at}`,
    ...(result.suppressed > 0 ? [`${n(result.suppressed)} on the internal list`] : []),
    ...(result.invalid > 0 ? [`${n(result.invalid)} not valid`] : []),
  ];
  ctx.info(
    `${parts.join(', ')}: calling windows only, nothing looked up, no credit spent; these are not do-not-call ` +
      'verdicts (`dnc check` looks numbers up)',
  );
  return result.invalid > 0 ? ExitCode.INPUT : ExitCode.OK;
}

type SuppressedJson = (typeof import('../render/check-records.js'))['suppressedJson'];
type SuppressedLines = (typeof import('../render/check-records.js'))['suppressedLines'];

/** One object a number: what it is, that it was not looked up, and its `calling` answer. */
export function numberJson(a: NumberWindow, suppressedJson: SuppressedJson): Record<string, unknown> {
  const base = a.suppressed
    ? (JSON.parse(suppressedJson(a.suppressed, a.country ?? undefined)) as Record<string, unknown>)
    : { phone_number: a.e164, country: a.country };
  return {
    ...base,
    input: a.input,
    looked_up: false,
    credit_cost: 0,
    ...(a.problem !== null ? { problem: a.problem } : {}),
    calling: a.calling,
  };
}

function numberLines(a: NumberWindow, color: boolean, unicode: boolean, suppressedLines: SuppressedLines): string[] {
  const label = terminalSafe(a.label);
  // As `dnc check` marks its verdicts, so that a list of numbers lines up.
  const mark = (symbol: string, word: string) =>
    paint(color, 'yellow', unicode ? `${symbol} ${word.padEnd(11)}` : word.padEnd(11));
  const head = a.suppressed
    ? suppressedLines(a.suppressed, label)
    : a.problem !== null
      ? [`${mark('!', 'invalid')}  ${label}  ${terminalSafe(a.problem)}`]
      : [`${mark('○', 'window only')}  ${label}  calling rules only: not a do-not-call verdict`];
  return [...head, ...callingLines(a.calling, a.country ?? undefined)];
}
