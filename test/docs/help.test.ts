// Help, help topics, parse errors, the man page and shell completion: each checked against the
// command tree and tables the code itself uses, and every example in a command's help run for real.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeProgram } from '../../src/cli-tree.js';
import { ENVIRONMENT_VARIABLES } from '../../src/config.js';
import { ERROR_CODES, EXIT_STATUS_MEANINGS } from '../../src/errors.js';
import { createTestIO } from '../../src/io.js';
import { buildProgram } from '../../src/main.js';
import { REPO_ROOT, runDnc, spawnDnc } from '../helpers/cli.js';
import { createWorkspace, ensureSandbox, stopSandbox, type Workspace } from './examples.js';

const program = buildProgram(
  { io: createTestIO(), env: {} },
  () => {},
  () => {},
);
const tree = describeProgram(program);
const commandNames = tree.commands.map((c) => c.name);
/**
 * The commands of commands (`dnc suppress add`), read from commander itself rather than from the tree
 * the man page and completion are made from, with their options' long names.
 */
const subcommands = program.commands.flatMap((parent) =>
  parent.commands.map((sub) => ({
    parent: parent.name(),
    name: sub.name(),
    options: sub.options.filter((o) => !o.hidden).map((o) => (o.long ?? o.short)!),
  })),
);

function bash(ws: Workspace, script: string, timeoutMs = 20_000) {
  const r = spawnSync('bash', ['-c', script], { cwd: ws.dir, env: ws.env, encoding: 'utf8', timeout: timeoutMs });
  return { code: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

describe('help topics come from the tables the code uses', () => {
  it('exit-codes lists every exit status and every error code with its status', async () => {
    const r = await runDnc(['help', 'exit-codes']);
    expect(r.code).toBe(0);
    for (const [code, meaning] of Object.entries(EXIT_STATUS_MEANINGS))
      expect(r.stdout).toContain(`  ${code.padEnd(4)} ${meaning}`);
    for (const [code, { exit, summary }] of Object.entries(ERROR_CODES)) {
      // Each code sits under the heading of its exit status.
      const section = r.stdout.split(`  exit ${exit}\n`)[1]!.split('\n\n')[0]!;
      expect(section).toContain(`${code.padEnd(24)} ${summary}`);
    }
    expect(r.stdout).toContain('7    batch finished, but some rows have no verdict');
  });

  it('environment lists every variable that any source file reads, and no other', async () => {
    const read = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) walk(full);
        else if (e.name.endsWith('.ts'))
          for (const m of readFileSync(full, 'utf8').matchAll(/\benv\.([A-Z_][A-Z0-9_]*)/g)) read.add(m[1]!);
      }
    };
    walk(path.join(REPO_ROOT, 'src'));
    const listed = ENVIRONMENT_VARIABLES.map((v) => v.name);
    expect([...read].sort()).toEqual([...listed].sort());
    const r = await runDnc(['help', 'environment']);
    for (const name of listed) expect(r.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
  });

  it("results and formats print the renderer's own columns, results and delimiters", async () => {
    const { CALLING_COLUMNS, DNC_COLUMNS, DNC_RESULTS } = await import('../../src/results/columns.js');
    const results = await runDnc(['help', 'results']);
    for (const c of [...DNC_COLUMNS, ...CALLING_COLUMNS]) expect(results.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
    for (const c of ['dnc_N_time_zones', 'dnc_N_calling_window'])
      expect(results.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
    for (const r of DNC_RESULTS) expect(results.stdout).toMatch(new RegExp(`^  ${r} `, 'm'));
    const formats = await runDnc(['help', 'formats']);
    expect(formats.code).toBe(0);
    expect(formats.stdout).toContain('among: , ; tab |');
  });

  it("help COMMAND is that command's help (completion included), and an unknown topic is a usage error with a suggestion", async () => {
    const completion = await runDnc(['help', 'completion']);
    expect(completion.code).toBe(0);
    expect(completion.stdout).toMatch(/^Usage: dnc completion /);
    expect(completion.stdout).not.toContain('Commands:');
    for (const name of commandNames) {
      const viaHelp = await runDnc(['help', name]);
      const viaFlag = await runDnc([name, '--help']);
      expect(viaHelp.stdout, name).toBe(viaFlag.stdout);
    }
    // A command of a command, as `dnc suppress add --help` shows it; a wrong one is named with a suggestion.
    expect((await runDnc(['help', 'suppress', 'add'])).stdout).toBe(
      (await runDnc(['suppress', 'add', '--help'])).stdout,
    );
    expect((await runDnc(['help', 'exempt', 'list'])).stdout).toMatch(/^Usage: dnc exempt list /);
    const wrongSub = await runDnc(['help', 'suppress', 'ad']);
    expect(wrongSub.code).toBe(2);
    expect(wrongSub.stderr).toMatch(
      /^dnc: error \[E_USAGE\]: no command 'suppress ad' \(did you mean suppress add\?\)\n/,
    );
    const tooDeep = await runDnc(['help', 'check', 'add']);
    expect(tooDeep.code).toBe(2);
    expect(tooDeep.stderr).toMatch(
      /^dnc: error \[E_USAGE\]: no command 'check add': check has no commands of its own\n/,
    );
    const unknown = await runDnc(['help', 'exit-code']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "dnc: error [E_USAGE]: no command or help topic 'exit-code' (did you mean exit-codes?)\n" +
        '  hint: commands: check, batch, usage, listen, sandbox, verify, window, trace, suppress, exempt, status, report, store, completion, help; topics: exit-codes, environment, results, formats\n',
    );
  });
});

describe("commander's parse errors in dnc's format", () => {
  it.each([
    [
      ['check', '--contry', 'GB', '+12025550100'],
      "unknown option '--contry' (did you mean --country?)",
      'dnc check --help',
    ],
    [['chek', '+12025550100'], "unknown command 'chek' (did you mean check?)", 'dnc --help'],
    [['batch'], "missing required argument 'input'", 'dnc batch --help'],
    [['usage', '--periods'], "option '--periods <n>' argument missing", 'dnc usage --help'],
    [
      ['completion', 'tcsh'],
      "command-argument value 'tcsh' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish.",
      'dnc completion --help',
    ],
    [['--frobnicate'], "unknown option '--frobnicate'", 'dnc --help'],
  ])('dnc %j', async (argv, message, where) => {
    const r = await runDnc(argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`dnc: error [E_USAGE]: ${message}\n  hint: see '${where}' for the usage\n`);
  });
});

describe("every command's help", () => {
  it('shows defaults as typed, names no internal path, and lists exit codes from the table', async () => {
    for (const name of commandNames) {
      const r = await runDnc([name, '--help']);
      expect(r.code, name).toBe(0);
      expect(r.stdout, name).not.toMatch(/default: "/);
      expect(r.stdout, name).not.toMatch(/choices: "/);
      expect(r.stdout, name).not.toMatch(/\bsrc\/|README/);
      // One list of exit codes, the one generated from the table (a second, by hand, drifts from it).
      expect(r.stdout.match(/^Exit codes\b/gm)?.length ?? 0, name).toBeLessThanOrEqual(1);
    }
    const batch = await runDnc(['batch', '--help']);
    expect(batch.stdout).toContain('(default: 8)');
    expect(batch.stdout).toContain(`  7    ${EXIT_STATUS_MEANINGS[7]}`);
    const sandbox = await runDnc(['sandbox', '--help']);
    expect(sandbox.stdout).toMatch(/\(one of:\s+monthly, annual; default:\s+monthly\)/);
  });

  it('every page of docs/ that a help or the man page names is in the package npm packs (an installed dnc has no clone)', async () => {
    const named = new Set<string>();
    for (const name of commandNames)
      for (const m of (await runDnc([name, '--help'])).stdout.matchAll(/\bdocs\/[\w.-]+\.md\b/g)) named.add(m[0]);
    expect(named.size).toBeGreaterThan(0);
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    const packed = new Set(
      (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path),
    );
    for (const page of named) expect(packed.has(page), page).toBe(true);
    const man = readFileSync(path.join(REPO_ROOT, 'dist', 'man', 'dnc.1'), 'utf8');
    expect(man).toContain('docs/');
    expect(packed.has('docs/README.md')).toBe(true);
  });

  it('is the same built alone as in the whole tree, and the built dnc --help lists the commands as the tree does', async () => {
    // `dnc NAME …` builds only NAME (src/main.ts COMMANDS); the help and completion commands build every one.
    for (const name of commandNames) {
      expect((await runDnc([name, '--help'])).stdout, name).toBe((await runDnc(['help', name])).stdout);
    }
    // The bundle's `dnc --help` lists the commands from a list written at build time (scripts/bundle.mjs); any
    // other way to the program's help builds the tree.
    const listed = await spawnDnc(['--help']);
    const built = await spawnDnc(['--quiet', '--help']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe(built.stdout);
    for (const name of commandNames) expect(listed.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
  });
});

describe("the examples in every command's help run", () => {
  let ws: Workspace;
  beforeAll(() => {
    ws = createWorkspace(mkdtempSync(path.join(os.tmpdir(), 'dnc-help-examples-')));
    // A sandbox in its own process: the examples run with spawnSync, which blocks this one.
    ensureSandbox(ws, '--credit-limit 100000');
    // Only an example's own sandbox (eval "$(dnc sandbox --detach)") is stopped after it.
    delete ws.env.DNC_SANDBOX_PID;
    copyFileSync(path.join(REPO_ROOT, 'fixtures', 'demo', 'call-list.csv'), path.join(ws.dir, 'leads.csv'));
    writeFileSync(path.join(ws.dir, 'numbers.txt'), '# to call today\n+12025550100\n+12025550102\n');
    // listen's examples need a batch whose lookups wait for webhook pushes.
    writeFileSync(path.join(ws.dir, 'calls.csv'), 'name,phone\nCara Diaz,+61 4 1234 5001\n');
    expect(
      bash(ws, 'dnc batch calls.csv --webhook-url https://hooks.example.com/hooks/3q2Jd0uFQ2yL8mNw1bXz4A').code,
    ).toBe(8);
  });
  afterAll(() => {
    stopSandbox(ws);
    rmSync(ws.dir, { recursive: true, force: true });
  });

  /** The statuses an example may end with: its command's ordinary outcomes, never a usage error. */
  const allowed: Record<string, number[]> = {
    check: [0, 10],
    batch: [0, 5, 7, 8],
    usage: [0],
    verify: [0, 3],
    // A list is written (0), or the file is refused as not fit to dial (3).
    window: [0, 3],
    trace: [0, 3],
    completion: [0],
    sandbox: [0],
    // Import examples name a file the scratch folder does not have: 3 is their documented refusal (never a crash).
    suppress: [0, 3],
    exempt: [0, 3],
    // A results file that is not there, or expiring, is what status reports (3).
    status: [0, 3],
    report: [0, 3],
    // Store examples name a team's server this machine cannot reach: 6 (E_STORE_UNAVAILABLE) is their refusal.
    store: [0, 6],
    // A listener keeps listening until its lookups are answered: still running after the timeout is a success.
    listen: [124],
  };

  it(
    'each example line parses, passes validation and ends as its command normally does',
    { timeout: 180_000 },
    async () => {
      let ran = 0;
      for (const name of commandNames) {
        const help = (await runDnc([name, '--help'])).stdout;
        const examples = help
          .split('\n')
          .filter((l) => /^ {2}(dnc |eval |source |grep .*\| dnc )/.test(l))
          // Install lines write into the user's shell folders; the load lines run the same command.
          .filter((l) => !/> [~"$]/.test(l))
          .map((l) =>
            l
              .trim()
              .split(/ {3,}|\s+#/)[0]!
              .trim(),
          );
        for (const example of examples) {
          // zsh and fish lines need those shells, which this machine may not have; bash runs the rest.
          const shell = /completion (zsh|fish)/.exec(example)?.[1];
          if (shell) {
            if (spawnSync('sh', ['-c', `command -v ${shell}`]).status !== 0) continue;
            const r = spawnSync(shell, ['-c', example], { cwd: ws.dir, env: ws.env, encoding: 'utf8' });
            expect({ status: r.status, stderr: r.stderr }, example).toEqual({ status: 0, stderr: '' });
            ran++;
            continue;
          }
          const script = `timeout 4 bash -c ${JSON.stringify(example)}; echo "exit=$?"; if [ -n "\${DNC_SANDBOX_PID:-}" ]; then kill $DNC_SANDBOX_PID; fi`;
          const sandboxScript = example.startsWith('eval ')
            ? `${example}; echo "exit=$?"; dnc check +12025550100 >/dev/null && echo checked; kill $DNC_SANDBOX_PID`
            : script;
          const r = bash(ws, sandboxScript, 30_000);
          const code = Number(/exit=(\d+)/.exec(r.stdout)?.[1]);
          expect(r.stderr, `${name}: ${example}`).not.toContain('[E_USAGE]');
          // The listener's examples use its default port: on a machine where something else holds it, they end as a
          // listener there must (E_PORT_IN_USE, exit 2), having passed every check of their flags.
          const portTaken = name === 'listen' && code === 2 && r.stderr.includes('[E_PORT_IN_USE]');
          if (!portTaken)
            expect(allowed[name], `${name}: ${example} exited ${code}\n${r.stdout}\n${r.stderr}`).toContain(code);
          if (example.startsWith('eval ')) expect(r.stdout, r.stderr).toContain('checked');
          ran++;
        }
      }
      expect(ran).toBeGreaterThanOrEqual(15);
    },
  );
});

/** Sourced by the zsh under the pseudo-terminal: completion from FPATH_DIR/_dnc, every match printed as HIT:… */
const ZSH_CAPTURE_INNER = `fpath=(FPATH_DIR $fpath)
autoload -U compinit; compinit -u -D
zstyle ':completion:*' list-grouped false
compprefuncs=( __no_list )
__no_list() { compstate[list]=""; }
compadd () {
  if [[ \${@[1,(i)(-(|-)|-[aODEAI]|*)]} == *-(O|A|D)\\ * ]]; then builtin compadd "$@"; return $?; fi
  typeset -a __hits
  builtin compadd -A __hits "$@"
  local h
  for h in $__hits; do print -r -- "HIT:$h"; done
  builtin compadd "$@"
}
__finish() { zle kill-whole-line; print; print -r -- "<END>"; zle accept-line }
zle -N __finish; bindkey "^X" __finish
`;

/** zsh -c SCRIPT capture INNER LINE: types LINE and TAB into an interactive zsh, prints the matches. */
const ZSH_CAPTURE = `zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "source $1"
zpty -n -w z "$2"$'\\t'
zpty -w z $'\\C-x'
integer n=0
while zpty -r z line; do
  [[ $line == *'<END>'* ]] && break
  [[ $line == *HIT:* ]] && print -r -- "\${\${line#*HIT:}%%$'\\r'*}"
  (( ++n > 5000 )) && break
done
zpty -d z
`;

describe('man page and completion cover the whole command tree', () => {
  const completion = (shell: string) => {
    return runDnc(['completion', shell]).then((r) => (expect(r.code).toBe(0), r.stdout));
  };

  it('every command and every option is in the man page built from the tree', () => {
    const man = readFileSync(path.join(REPO_ROOT, 'dist', 'man', 'dnc.1'), 'utf8');
    const roff = (s: string) => s.replace(/-/g, '\\-');
    for (const c of tree.commands) {
      expect(man, c.name).toContain(`.B dnc ${roff(c.name)}`);
      for (const o of c.options) expect(man, `${c.name} ${o.long}`).toContain(roff(o.long ?? o.short!));
    }
    for (const o of tree.options) expect(man).toContain(roff(o.long!));
    // Each command of a command has its own section, named in full, with its options in it.
    expect(subcommands.length).toBeGreaterThanOrEqual(10);
    const sections = man.split('\n.SS\n');
    for (const sub of subcommands) {
      const section = sections.find((x) => x.startsWith(`.B dnc ${roff(sub.parent)} ${roff(sub.name)} `));
      expect(section, `${sub.parent} ${sub.name}`).toBeDefined();
      for (const o of sub.options)
        expect(section, `${sub.parent} ${sub.name} ${o}`).toMatch(
          new RegExp(`^\\.B .*${roff(o).replace(/\\/g, '\\\\')}\\b`, 'm'),
        );
    }
    // Nothing outside ASCII is left for groff to read as Latin-1 (`groff -man` alone, without man's preconv).
    expect(man).not.toMatch(/[^\x00-\x7f]/);
    const groff = spawnSync('groff', ['-man', '-Tutf8', '-ww', '-z', path.join(REPO_ROOT, 'dist', 'man', 'dnc.1')], {
      encoding: 'utf8',
    });
    if (groff.error === undefined) expect(groff.stderr).toBe('');
    for (const code of Object.keys(EXIT_STATUS_MEANINGS)) expect(man).toContain(`.B ${code}\n`);
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
      man: string[];
      files: string[];
    };
    expect(pkg.man).toEqual(['./dist/man/dnc.1']);
    // man renders it without a warning.
    const r = spawnSync('man', ['--warnings', '-l', path.join(REPO_ROOT, 'dist', 'man', 'dnc.1')], {
      encoding: 'utf8',
      env: { ...process.env, MANWIDTH: '80', MAN_KEEP_FORMATTING: '' },
    });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('EXIT STATUS');
  });

  it('every command and every option is in the bash, zsh and fish scripts', async () => {
    const scripts = { bash: await completion('bash'), zsh: await completion('zsh'), fish: await completion('fish') };
    for (const c of tree.commands) {
      expect(scripts.bash).toMatch(new RegExp(`^ {6}${c.name}\\) opts='[^']*'`, 'm'));
      expect(scripts.zsh).toContain(`'${c.name}:`);
      expect(scripts.fish).toContain(`-a ${c.name} -d`);
      const bashOpts = new RegExp(`^ {6}${c.name}\\) opts='([^']*)'`, 'm').exec(scripts.bash)![1]!.split(' ');
      for (const o of [...c.options, ...tree.options]) {
        expect(bashOpts, `${c.name} ${o.long}`).toContain(o.long);
        expect(scripts.zsh, `${c.name} ${o.long}`).toContain(`${o.long}[`);
        expect(scripts.fish, `${c.name} ${o.long}`).toContain(`-l ${o.long!.slice(2)} `);
      }
    }
    const fishLines = scripts.fish.split('\n');
    for (const sub of subcommands) {
      const bashOpts = new RegExp(`^ {6}${sub.parent}/${sub.name}\\) opts='([^']*)'`, 'm')
        .exec(scripts.bash)?.[1]
        ?.split(' ');
      expect(bashOpts, `${sub.parent} ${sub.name}`).toBeDefined();
      const zshSection = new RegExp(`^ {8}\\(${sub.parent}\\)\n[^]*?^ {16}\\(${sub.name}\\)\n([^]*?) ;;$`, 'm').exec(
        scripts.zsh,
      )?.[1];
      expect(zshSection, `${sub.parent} ${sub.name}`).toBeDefined();
      expect(scripts.fish).toContain(`-a ${sub.name} -d`);
      for (const o of sub.options) {
        expect(bashOpts, `${sub.parent} ${sub.name} ${o}`).toContain(o);
        expect(zshSection, `${sub.parent} ${sub.name} ${o}`).toContain(`${o}[`);
        const inSub = `__fish_seen_subcommand_from ${sub.parent}; and __fish_seen_subcommand_from ${sub.name}'`;
        const flag = o.startsWith('--') ? `-l ${o.slice(2)} ` : `-s ${o.slice(1)} `;
        expect(
          fishLines.some((l) => l.includes(inSub) && l.includes(flag)),
          `${sub.parent} ${sub.name} ${o}`,
        ).toBe(true);
      }
    }
  });

  it(
    'zsh and fish, where installed, parse their scripts, register them and complete from them',
    { timeout: 90_000 },
    async () => {
      const has = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;
      const ws = createWorkspace(mkdtempSync(path.join(os.tmpdir(), 'dnc-completion-')));
      try {
        // Checked here on every machine: each script names its shell's own loading mechanism.
        expect(await completion('zsh')).toMatch(/^#compdef dnc\n/);
        expect(await completion('fish')).toContain("complete -c dnc -n '__fish_use_subcommand' -a check");
        if (has('zsh')) {
          writeFileSync(path.join(ws.dir, '_dnc'), await completion('zsh'));
          expect(bash(ws, 'zsh -n _dnc')).toMatchObject({ code: 0, stderr: '' });
          const zsh = bash(
            ws,
            `zsh -c 'autoload -Uz compinit && compinit -u -d "$HOME/.zcompdump" && source <(dnc completion zsh) && print -r -- \${_comps[dnc]}'`,
          );
          expect(zsh.stdout).toBe('_dnc\n');
        }
        if (has('fish')) {
          writeFileSync(path.join(ws.dir, 'dnc.fish'), await completion('fish'));
          expect(bash(ws, 'fish -n dnc.fish')).toMatchObject({ code: 0, stderr: '' });
          const fish = (line: string) =>
            bash(ws, `fish -c 'dnc completion fish | source; complete -C "${line}"'`)
              .stdout.trim()
              .split('\n')
              .map((l) => l.split('\t')[0]);
          expect(fish('dnc che')).toEqual(['check']);
          expect(fish('dnc check --cou')).toEqual(['--country']);
          expect(fish('dnc check --country ').sort()).toEqual(['AU', 'BE', 'DE', 'ES', 'GB', 'IE', 'NZ', 'US']);
          expect(fish('dnc suppress ').sort()).toEqual(['add', 'count', 'export', 'import', 'list', 'log', 'remove']);
          expect(fish('dnc exempt add --evi')).toEqual(['--evidence']);
          expect(fish('dnc suppress add --country ').sort()).toEqual(['AU', 'BE', 'DE', 'ES', 'GB', 'IE', 'NZ', 'US']);
        }
        if (has('zsh')) {
          // What zsh offers at a TAB, read through a pseudo-terminal: compadd is wrapped to print each match.
          writeFileSync(path.join(ws.dir, 'inner.zsh'), ZSH_CAPTURE_INNER.replace('FPATH_DIR', ws.dir));
          const zsh = (line: string) => {
            const r = spawnSync('zsh', ['-f', '-c', ZSH_CAPTURE, 'capture', path.join(ws.dir, 'inner.zsh'), line], {
              cwd: ws.dir,
              env: ws.env,
              encoding: 'utf8',
              timeout: 20_000,
            });
            return [...new Set(r.stdout.split('\n').filter((l) => l !== ''))].sort();
          };
          expect(zsh('dnc chec')).toEqual(['check']);
          expect(zsh('dnc suppress ')).toEqual(['add', 'count', 'export', 'import', 'list', 'log', 'remove']);
          expect(zsh('dnc suppress add --rea')).toEqual(['--reason']);
          expect(zsh('dnc check --country ')).toEqual(['AU', 'BE', 'DE', 'ES', 'GB', 'IE', 'NZ', 'US']);
        }
      } finally {
        rmSync(ws.dir, { recursive: true, force: true });
      }
    },
  );

  it('bash loads the script and completes commands, options, --country codes, files and choices', () => {
    const ws = createWorkspace(mkdtempSync(path.join(os.tmpdir(), 'dnc-completion-')));
    try {
      expect(bash(ws, 'source <(dnc completion bash) && complete -p dnc').stdout).toBe(
        'complete -o filenames -F _dnc dnc\n',
      );
      writeFileSync(path.join(ws.dir, 'leads.csv'), 'phone\n');
      const complete = (...words: string[]) =>
        bash(
          ws,
          `source <(dnc completion bash); COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${words.length - 1}; _dnc; printf '%s\\n' "\${COMPREPLY[@]}"`,
        )
          .stdout.trim()
          .split('\n');
      expect(complete('dnc', 'ba')).toEqual(['batch']);
      expect(complete('dnc', 'check', '--cou')).toEqual(['--country']);
      expect(complete('dnc', 'check', '--country', '')).toEqual(['US', 'GB', 'DE', 'IE', 'BE', 'NZ', 'ES', 'AU']);
      expect(complete('dnc', 'batch', 'lea')).toEqual(['leads.csv']);
      expect(complete('dnc', 'batch', 'leads.csv', '--callable-out', 'le')).toEqual(['leads.csv']);
      expect(complete('dnc', 'completion', '')).toEqual(['bash', 'zsh', 'fish']);
      expect(complete('dnc', 'help', 'exit')).toEqual(['exit-codes']);
      // Global options after a command, as commander accepts them.
      expect(complete('dnc', 'usage', '--base')).toEqual(['--base-url']);
      // The commands of a command, their options, and their options' values.
      expect(complete('dnc', 'suppress', '')).toEqual([
        'add',
        'remove',
        'import',
        'export',
        'list',
        'count',
        'restore',
        'log',
      ]);
      expect(complete('dnc', 'exempt', 'li')).toEqual(['list']);
      expect(complete('dnc', 'exempt', 'add', '+12025550143', '--basis', '')).toEqual([
        'consent',
        'ebr-purchase',
        'ebr-inquiry',
      ]);
      expect(complete('dnc', 'suppress', 'add', '--rea')).toEqual(['--reason']);
      expect(complete('dnc', 'suppress', 'export', '-o', 'lea')).toEqual(['leads.csv']);
      expect(complete('dnc', 'suppress', 'import', 'lea')).toEqual(['leads.csv']);
      expect(complete('dnc', 'suppress', 'add', '--country', 'G')).toEqual(['GB']);
      for (const sub of subcommands) {
        const offered = complete('dnc', sub.parent, sub.name, '-');
        for (const o of sub.options) expect(offered, `${sub.parent} ${sub.name} ${o}`).toContain(o);
      }
      // listen's --path is a URL path: no file names.
      expect(complete('dnc', 'listen', '--path', 'lea')).toEqual(['']);
    } finally {
      rmSync(ws.dir, { recursive: true, force: true });
    }
  });
});

describe('dnc sandbox --detach', () => {
  /** A workspace whose temporary folder (TMPDIR) is its own, to see what a sandbox leaves there. */
  const detachSpace = () => {
    const ws = createWorkspace(mkdtempSync(path.join(os.tmpdir(), 'dnc-detach-')));
    ws.env.TMPDIR = path.join(ws.dir, 'tmp');
    mkdirSync(ws.env.TMPDIR);
    return { ws, left: () => readdirSync(ws.env.TMPDIR!) };
  };

  it('returns once the sandbox listens, exports its address, key and pid, and kill stops it', () => {
    const { ws, left } = detachSpace();
    try {
      const r = bash(
        ws,
        `eval "$(dnc sandbox --detach --credit-limit 77 --key 'sbx_it'"'"'s_$HOME' --time-scale 0.0000001 --duplicate-push-rate 0.5 --costs US=2,GB=3 --countries US,GB)" || exit 9
         echo "url=$DNC_BASE_URL key=$DNC_API_KEY pid=$DNC_SANDBOX_PID"
         dnc --json usage | jq -c '.data[0].credit_limit'
         kill $DNC_SANDBOX_PID
         for i in $(seq 50); do kill -0 $DNC_SANDBOX_PID 2>/dev/null || { echo stopped; exit 0; }; sleep 0.1; done; echo running`,
      );
      expect(r.code, r.stderr).toBe(0);
      // A key with a quote and a $ survives eval unexpanded; typed values (1e-7 as String() writes it, the
      // costs and countries) are passed on in a form the detached sandbox accepts.
      expect(r.stdout).toMatch(/^url=http:\/\/127\.0\.0\.1:\d+ key=sbx_it's_\$HOME pid=\d+\n77\nstopped\n$/);
      expect(r.stderr).toMatch(
        /^sandbox: running in the background \(pid \d+\), log \S+sandbox\.log; stop it with: kill \$DNC_SANDBOX_PID\n$/,
      );
      // Stopped by its signal, it removed its folder (output and log) from TMPDIR.
      expect(left()).toEqual([]);
    } finally {
      rmSync(ws.dir, { recursive: true, force: true });
    }
  });

  it('stopped with SIGINT it leaves nothing in TMPDIR either; killed outright (-9), its log is kept', () => {
    const { ws, left } = detachSpace();
    try {
      const stop = (signal: string) =>
        bash(
          ws,
          `eval "$(dnc sandbox --detach)" || exit 9
           ls "$TMPDIR" | grep -c '^dnc-sandbox-'
           kill -${signal} $DNC_SANDBOX_PID
           for i in $(seq 50); do kill -0 $DNC_SANDBOX_PID 2>/dev/null || { echo stopped; exit 0; }; sleep 0.1; done; echo running`,
        );
      const int = stop('INT');
      expect(int.stdout, int.stderr).toBe('1\nstopped\n');
      expect(left()).toEqual([]);
      const killed = stop('KILL');
      expect(killed.stdout, killed.stderr).toBe('1\nstopped\n');
      expect(left()).toHaveLength(1);
      expect(readdirSync(path.join(ws.env.TMPDIR!, left()[0]!)).sort()).toEqual(['sandbox.log', 'stdout']);
    } finally {
      rmSync(ws.dir, { recursive: true, force: true });
    }
  });

  it('a sandbox that cannot start passes on its error and exit status, prints nothing to eval, and leaves no folder', () => {
    const { ws, left } = detachSpace();
    try {
      const r = bash(ws, 'dnc sandbox --detach --plan weekly');
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(
        "dnc: error [E_USAGE]: option '--plan <plan>' argument 'weekly' is invalid. Allowed choices are monthly, annual.",
      );
      // One that fails once started (its port taken): its error is passed on, and its folder goes with it.
      const busy = bash(
        ws,
        `eval "$(dnc sandbox --detach)" || exit 9
         dnc sandbox --detach --port "\${DNC_BASE_URL##*:}"; echo "exit $?"
         kill $DNC_SANDBOX_PID
         for i in $(seq 50); do kill -0 $DNC_SANDBOX_PID 2>/dev/null || exit 0; sleep 0.1; done`,
      );
      expect(busy.stdout).toBe('exit 2\n');
      expect(busy.stderr).toContain('[E_SANDBOX_LISTEN]');
      expect(left()).toEqual([]);
    } finally {
      rmSync(ws.dir, { recursive: true, force: true });
    }
  });
});
