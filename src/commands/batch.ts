// `dnc batch`: placeholder registration until the command is built (see its issue).
import type { Command } from 'commander';
import { usageError } from '../errors.js';
import type { CommandHost } from '../main.js';

export function registerBatch(program: Command, host: CommandHost): void {
  const command = program.command('batch').description('(not built yet)');
  host.action(command, async () => {
    throw usageError('E_NOT_BUILT', '`dnc batch` is not built yet');
  });
}
