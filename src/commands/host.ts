// What a command file is given to register its action: main builds the context and turns the result into the exit.
import type { Command } from 'commander';
import type { Context } from '../context.js';
import type { JsonError } from '../render/error.js';

/** How a command file hands its work to main: `host.action(command, (ctx, cmd) => …)` returns the exit code. */
export interface CommandHost {
  action(command: Command, run: (ctx: Context, command: Command) => Promise<number>, how?: ActionOptions): void;
}

export interface ActionOptions {
  /**
   * With --json, what stdout gets when the command is refused before it runs (a flag commander refused, say): by
   * default `{"error": …}`; a command whose output is one object on every exit (a batch's summary) gives its own.
   */
  refusedJson?(error: JsonError): object;
}
