// `dnc help [COMMAND|TOPIC]`: a command's help, or a topic (exit codes, environment, results, formats)
// printed from the same tables the code uses, so help can never drift from behaviour.
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { ExitCode, usageError, type ExitCodeValue } from '../errors.js';
import type { CommandHost } from './host.js';
import { exitStatusLines, TOPIC_NAMES } from '../render/help-text.js';
import { suggest } from '../suggest.js';

/**
 * The exit statuses each command can give, with what a status means for that command where the
 * general meaning (EXIT_STATUS_MEANINGS) is not precise enough; null takes the general meaning.
 * A command not listed refers to `dnc help exit-codes`.
 */
const EXITS_BY_COMMAND: Readonly<Record<string, Partial<Record<ExitCodeValue, string | null>>>> = {
  check: {
    0: 'every number was answered (or, with --webhook-url, started)',
    2: 'bad option, unknown --country, bad --webhook-url, AU number without --webhook-url, missing configuration',
    3: 'a number is invalid (locally or invalid_phone_number) or its country is unsupported (422)',
    4: 'the key was refused (401/403); later numbers are not sent',
    5: 'credit limit reached (429); later numbers are not sent',
    6: 'service or network failure after retries (billing_error, lookup_expired, upstream_*, 5xx)',
    10: null,
    130: 'interrupted: the lookup in flight finishes and is shown, later numbers are not sent',
  },
  batch: {
    0: 'every row has a verdict',
    2:
      'bad option, phone column missing or ambiguous, two of input, outputs, journal and manifest on one file, ' +
      'journal of another input',
    3:
      'malformed CSV (file, line, record and what is wrong are printed), or an output folder that cannot be ' +
      'written; nothing was sent',
    4: 'the key was refused (401/403)',
    5: 'credit limit (429) or --max-credits reached: rerun to resume',
    6: 'the service failed or could not be reached: rerun to resume',
    7: null,
    8: 'finished, but webhook results are pending: run `dnc listen --results OUTPUT`',
    130: 'interrupted: rerun to resume',
  },
  usage: { 0: null, 2: 'bad option, or the service refused the query (400) or the period (404)', 4: null, 6: null },
  listen: {
    0: 'nothing pending: by itself with --exit-when-done, or when stopped',
    2: 'bad option, a busy port, or OUTPUT.csv has no batch journal',
    3: 'OUTPUT.csv cannot be written (the pushes received stay in the journal)',
    130: 'stopped (SIGINT/SIGTERM) with lookups still pending: run it again to go on',
  },
  verify: {
    0: 'fit to dial',
    2: 'bad option',
    3: 'not fit to dial: rows to re-check, the file changed after dnc wrote it, its journal gone, or no manifest',
  },
  window: {
    0:
      'the list was written (it may hold no number: none was inside its window for the whole slot); rows left ' +
      'out (pending, failed…) leave the file not fit as a whole, which the summary says, with what makes it fit; ' +
      '--number: every number answered',
    2: 'bad option (a time without its offset, a slot that ends before it starts), or --dial-out on the evidence',
    3:
      'not fit to dial (altered, unproven or stale: nothing written), no manifest, or the list cannot be written; ' +
      '--number: a number that cannot be valid',
  },
  trace: { 0: 'found', 2: 'bad option', 3: 'no record of that correlation id on this machine' },
  sandbox: {
    0: 'stopped by SIGINT/SIGTERM, or started in the background (--detach)',
    2: 'bad option, or the port cannot be bound',
  },
  suppress: {
    0: null,
    2: 'bad option, or the suppression list named does not exist',
    3: 'a number or a file that cannot be read (file, line and value are printed); nothing is changed',
  },
  exempt: {
    0: null,
    2: 'bad option (basis, date), or the suppression list named does not exist',
    3: 'a number or a file that cannot be read (file, line and value are printed); nothing is changed',
  },
  status: {
    0: 'every results file is fit to dial and valid beyond the --expiring window',
    2: 'bad option',
    3:
      'a results file is not fit to dial (as `dnc verify` judges it), has expired or will within --expiring, or ' +
      'cannot be read',
  },
  report: {
    0: 'the report was written and the results file is fit to dial',
    2: 'bad option',
    3:
      'the report was written but the results file is not fit to dial (as `dnc verify` judges it; stderr says ' +
      'why and what makes it fit), or the results file or its manifest cannot be read, or the report cannot be ' +
      'written',
  },
};

/** Lines listing exit statuses with their meanings, from errors.ts's table (or a command's own words for them). */
/**
 * Appends "Exit codes:" (generated from the table) to every command that lists its statuses, and a pointer to the
 * topics.
 */
export function addExitCodeHelp(program: Command): void {
  for (const command of program.commands) {
    const statuses = EXITS_BY_COMMAND[command.name()];
    if (!statuses) continue;
    // Written when that help is shown: a run shows one help at most, and start-up pays for nothing else.
    command.addHelpText('after', () =>
      ['', 'Exit codes:', ...exitStatusLines(statuses), '  (every code: dnc help exit-codes)'].join('\n'),
    );
  }
  program.addHelpText('after', () =>
    [
      '',
      'Exit codes:',
      ...exitStatusLines(),
      '',
      `Help topics: dnc help ${TOPIC_NAMES.join(' | ')}; a command: dnc help COMMAND`,
    ].join('\n'),
  );
}

export function registerHelp(program: Command, host: CommandHost): void {
  program.helpCommand(false);
  const command = program
    .command('help')
    .description(`show help for a command, or a topic: ${TOPIC_NAMES.join(', ')}`)
    .argument(
      '[command-or-topic...]',
      `a command (\`suppress add\` for a command of a command), or one of: ${TOPIC_NAMES.join(', ')}`,
    );
  host.action(command, (ctx) => runHelp(ctx, program, (command.processedArgs[0] as string[] | undefined) ?? []));
}

function findCommand(parent: Command, name: string): Command | undefined {
  return parent.commands.find((c) => c.name() === name || c.aliases().includes(name));
}

async function runHelp(ctx: Context, program: Command, names: string[]): Promise<number> {
  const [name, ...rest] = names;
  if (name === undefined) {
    program.outputHelp();
    return ExitCode.OK;
  }
  let sub = findCommand(program, name);
  if (sub) {
    // `dnc help suppress add`, as `dnc suppress add --help`.
    let path = sub.name();
    for (const word of rest) {
      const next = findCommand(sub, word);
      if (!next) {
        const own = sub.commands.map((c) => c.name());
        if (own.length === 0)
          throw usageError('E_USAGE', `no command '${path} ${word}': ${path} has no commands of its own`, {
            hint: `see 'dnc ${path} --help'`,
          });
        const guess = suggest(word, own);
        throw usageError('E_USAGE', `no command '${path} ${word}'${guess ? ` (did you mean ${path} ${guess}?)` : ''}`, {
          hint: `commands of ${path}: ${own.join(', ')}`,
        });
      }
      sub = next;
      path = `${path} ${sub.name()}`;
    }
    sub.outputHelp();
    return ExitCode.OK;
  }
  if (rest.length > 0)
    throw usageError('E_USAGE', `help takes one topic: '${names.join(' ')}'`, {
      hint: `topics: ${TOPIC_NAMES.join(', ')}`,
    });
  const { topicLines } = await import('../render/help-topics.js');
  const lines = await topicLines(name);
  if (lines) {
    ctx.io.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.OK;
  }
  const known = [...program.commands.map((c) => c.name()), ...TOPIC_NAMES];
  const guess = suggest(name, known);
  throw usageError('E_USAGE', `no command or help topic '${name}'${guess ? ` (did you mean ${guess}?)` : ''}`, {
    hint: `commands: ${program.commands.map((c) => c.name()).join(', ')}; topics: ${TOPIC_NAMES.join(', ')}`,
  });
}
