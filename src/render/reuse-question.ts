// What a batch says of the numbers this service answered within the last day: the question on a terminal, and the
// summary's line when they were paid for again.
import type { ReuseQuestion } from '../batch/job.js';
import type { PaidAgain } from '../batch/recent-answers.js';
import { formatInteger } from '../text/numbers.js';
import { formatDuration } from '../time.js';

/** The question asked on a terminal: what was found, what paying again costs, the three choices. */
export function reuseQuestion(q: ReuseQuestion): string {
  const n = formatInteger;
  return (
    `dnc: ${n(q.numbers)} of the ${n(q.of)} number(s) to look up were answered by this service within the last ` +
    `day (the results cache; the oldest ${ageText(q.oldestMs)} ago), and those answers are still valid.\n` +
    `  r  reuse those answers: not sent, no credits (as --reuse-within 1d)\n` +
    `  p  pay again for fresh answers: about ${n(q.credits)} credit(s) (as --no-reuse)\n` +
    `  s  stop: nothing is sent\n` +
    `Reuse, pay again or stop? [R/p/s] `
  );
}

/** The summary's line for the numbers of the last day paid for again. */
export function paidAgainLine(p: PaidAgain): string {
  const n = formatInteger;
  const what = `${n(p.numbers)} number(s) answered within the last day were paid again (${n(p.credits)} credit(s))`;
  const said = p.numbers === 0 ? [] : [p.decision === 'pay_again' ? `${what}, as asked` : what];
  if (p.numbers > 0 && p.decision !== 'pay_again') said.push('--reuse-within 1d would have reused them');
  const other = p.chargedWithoutVerdict;
  if (other.numbers > 0)
    said.push(
      `${p.numbers > 0 ? 'another ' : ''}${n(other.credits)} credit(s) went on ${n(other.numbers)} charged ` +
        'answer(s) without a verdict (billing_error, invalid_phone_number): no cache keeps them, so every run ' +
        'pays for them again',
    );
  return said.join('; ');
}

/** "40s", "3m", "5h": how old an answer is. */
function ageText(ms: number): string {
  if (ms < 60_000) return `${Math.max(1, Math.round(ms / 1000))}s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)}m`;
  return formatDuration(Math.round(ms / 3_600_000) * 3_600_000);
}
