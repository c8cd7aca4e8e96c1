// `dnc batch`'s questions on a terminal (a person at both ends): which columns hold the numbers, and whether to pay
// again for the answers of the last day.
import type { BatchRunDeps } from '../batch/job.js';
import type { Context } from '../context.js';
import { reuseQuestion } from '../render/reuse-question.js';

/** Asks on the terminal whether to reuse the answers of the last day, pay again, or stop (end of input: stop). */
export function askReuseOn(ctx: Context): NonNullable<BatchRunDeps['askReuse']> {
  return async (question) => {
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr, terminal: true });
    const closed = new Promise<null>((resolve) => rl.once('close', () => resolve(null)));
    try {
      let prompt = reuseQuestion(question);
      for (let tries = 0; tries < 3; tries++) {
        const answer = await Promise.race([rl.question(prompt), closed]);
        if (answer === null) return 'stop';
        const a = answer.trim().toLowerCase();
        if (a === '' || a === 'r' || a === 'reuse') return 'reuse';
        if (a === 'p' || a === 'pay' || a === 'pay again') return 'pay_again';
        if (a === 's' || a === 'stop') return 'stop';
        prompt = 'Please answer r (reuse), p (pay again) or s (stop): ';
      }
      return 'stop';
    } finally {
      rl.close();
    }
  };
}

/** Asks on the terminal which of the candidate columns to scrub; null when the answer is empty (stop). */
export function askColumnsOn(ctx: Context): NonNullable<BatchRunDeps['askColumns']> {
  return async ({ input, candidates }) => {
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr, terminal: true });
    try {
      const answer = await rl.question(
        `dnc is not sure which columns of ${input} hold the phone numbers: ${candidates.join(', ')}\n` +
          'Scrub which? (names or numbers, comma-separated; empty to stop) ',
      );
      return answer.trim() === '' ? null : answer.trim();
    } finally {
      rl.close();
    }
  };
}
