// `dnc completion bash|zsh|fish`: prints a completion script generated from dnc's own command tree.
import { Argument, type Command } from 'commander';
import { describeProgram, type ProgramSpec } from '../cli-tree.js';
import { ExitCode } from '../errors.js';
import type { CommandHost } from './host.js';
import { completionScript, SHELLS, type Shell } from '../render/completion.js';
import { DESCRIBED_COUNTRIES } from '../wire/types.js';
import { TOPIC_NAMES } from '../render/help-text.js';

const HELP = `
Load it in the current shell:
  source <(dnc completion bash)
  source <(dnc completion zsh)
  dnc completion fish | source

Install it for every new shell:
  dnc completion bash > ~/.local/share/bash-completion/completions/dnc
  dnc completion zsh > "\${fpath[1]}/_dnc"
  dnc completion fish > ~/.config/fish/completions/dnc.fish`;

/** The tree completion and the man page are made from; `help`'s argument completes to commands and topics. */
export function programSpec(program: Command): ProgramSpec {
  return describeProgram(program, {
    'help command-or-topic': [...program.commands.map((c) => c.name()), ...TOPIC_NAMES],
  });
}

export function registerCompletion(program: Command, host: CommandHost): void {
  const command = program
    .command('completion')
    .description('print a shell completion script (commands, options, --country codes, file names)')
    .addArgument(new Argument('<shell>', 'the shell to complete for').choices(SHELLS))
    .addHelpText('after', HELP);
  host.action(command, async (ctx) => {
    const shell = command.processedArgs[0] as Shell;
    // The service covers these countries; other regions parse but its answer would be a 422.
    ctx.io.stdout.write(completionScript(shell, { program: programSpec(program), countries: DESCRIBED_COUNTRIES }));
    return ExitCode.OK;
  });
}
