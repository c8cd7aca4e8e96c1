// `dnc usage`: placeholder registration until the command is built (see its issue).
import type { Command } from 'commander';
import { usageError } from '../errors.js';
import type { CommandHost } from '../main.js';

export function registerUsage(program: Command, host: CommandHost): void {
  const command = program.command('usage').description('(not built yet)');
  host.action(command, async () => {
    throw usageError('E_NOT_BUILT', '`dnc usage` is not built yet');
  });
}
