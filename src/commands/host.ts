// What a command file is given to register its action: main builds the context and turns the result into the exit.
import type { Command } from 'commander';
import type { Context } from '../context.js';

/** How a command file hands its work to main: `host.action(command, (ctx, cmd) => …)` returns the exit code. */
export interface CommandHost {
  action(command: Command, run: (ctx: Context, command: Command) => Promise<number>): void;
}
