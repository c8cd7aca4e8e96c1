// `dnc listen`: placeholder registration until the command is built (see its issue).
import type { Command } from 'commander';
import { usageError } from '../errors.js';
import type { CommandHost } from '../main.js';

export function registerListen(program: Command, host: CommandHost): void {
  const command = program.command('listen').description('(not built yet)');
  host.action(command, async () => {
    throw usageError('E_NOT_BUILT', '`dnc listen` is not built yet');
  });
}
