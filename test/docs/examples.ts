// Reads the `console` blocks of README.md and docs/*.md and runs them in bash against a fresh sandbox,
// so every example a user copies is one that works and prints what the page shows.
//
// A page's blocks run in order in one scratch folder (so a batch can be verified and traced by later
// blocks), with the built `dnc` first on the PATH and HOME/XDG folders inside the scratch folder.
// Directives (HTML comments, invisible on the rendered page; the prose says the same in words):
//   <!-- example-sandbox: ARGS -->  a fresh `dnc sandbox --detach ARGS` for the blocks that follow
//   <!-- example-file: NAME -->     the next fenced block is written to NAME in the scratch folder
//   <!-- example-cwd: DIR -->       later blocks run in DIR (relative to the repository: fixtures)
// A block that cannot run has the visible line `*Not run by the example test: REASON.*` just above it.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BIN, REPO_ROOT } from '../helpers/cli.js';

export interface Command {
  /** The command as typed after `$ ` (continuation lines joined with their backslashes). */
  text: string;
  /** The lines the page shows under it. */
  expected: string[];
}

export interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  commands: Command[];
  /** Why the block is not run, when it is marked so. */
  notRun: string | undefined;
  /** The arguments of the sandbox the runner starts for the block; undefined: the page starts its own (or needs none). */
  sandbox: string | undefined;
  cwd: string | undefined;
  files: Array<{ name: string; content: string }>;
}

export const NOT_RUN = /^\*Not run by the example test: (.+)\.\*$/;

/** Every markdown page the test covers: README.md and everything under docs/. */
export function docPages(): string[] {
  const pages = [path.join(REPO_ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.md')) pages.push(full);
    }
  };
  if (existsSync(path.join(REPO_ROOT, 'docs'))) walk(path.join(REPO_ROOT, 'docs'));
  return pages;
}

export function parseBlocks(file: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  let sandbox: string | undefined;
  let cwd: string | undefined;
  let pendingFile: string | undefined;
  const files: Array<{ name: string; content: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const directive = /^<!-- example-(sandbox|file|cwd): ?(.*?) ?-->$/.exec(line);
    if (directive) {
      if (directive[1] === 'sandbox') sandbox = directive[2]!;
      else if (directive[1] === 'cwd') cwd = directive[2]!;
      else pendingFile = directive[2]!;
      continue;
    }
    const fence = /^```(\S*)/.exec(line);
    if (!fence) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    if (pendingFile !== undefined) {
      files.push({ name: pendingFile, content: `${body.join('\n')}\n` });
      pendingFile = undefined;
      continue;
    }
    if (fence[1] !== 'console') continue;
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const notRun = before >= 0 ? NOT_RUN.exec(lines[before]!)?.[1] : undefined;
    const commands: Command[] = [];
    for (let j = 0; j < body.length; j++) {
      const l = body[j]!;
      if (l.startsWith('$ ')) {
        let cmd = l.slice(2);
        while (cmd.endsWith('\\') && j + 1 < body.length) cmd += `\n${body[++j]!}`;
        commands.push({ text: cmd, expected: [] });
      } else if (commands.length > 0) {
        commands[commands.length - 1]!.expected.push(l);
      }
    }
    blocks.push({ file, line: start + 1, commands, notRun, sandbox, cwd, files: [...files] });
  }
  return blocks;
}

/**
 * What may differ between two runs of the same example: correlation ids, timestamps and dates, ports,
 * process ids, folders of a path, durations and rates, hashes. Both sides are normalised the same way.
 */
export function normalise(text: string): string {
  return (
    text
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
      .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?/g, '<time>')
      .replace(/\d{4}-\d{2}-\d{2}/g, '<date>')
      .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
      .replace(/\bpid \d+|DNC_SANDBOX_PID=\d+/g, (m) => m.replace(/\d+/, '<pid>'))
      .replace(/(?:\/[\w.@-]+)+\/(?=[\w.@-]+)/g, '')
      .replace(/\b\d+(\.\d+)?\s?(ms|s)\b/g, '<duration>')
      .replace(/\bin \d+h\d+m\b/g, 'in <duration>')
      // An age in days has a tenth when it is not whole: `26337.3 days ago` at one hour, `26337 days ago` at another.
      .replace(/\b[\d,]+(\.\d+)? days ago\b/g, '<n> days ago')
      .replace(/\b[\d,]+\/s\b/g, '<rate>')
      .replace(/\b[0-9a-f]{16,64}\b/g, '<hash>')
      // How many deliveries a listener saw depends on when it started and how fast it answered (the
      // service retries and may deliver twice); the verdicts after them do not.
      .replace(/received [\d,]+ · duplicates [\d,]+/g, 'received <n> · duplicates <n>')
      .replace(/[ \t]+$/gm, '')
  );
}

/** Expected lines against actual ones; a line that is just `…` stands for any number of lines. */
export function matches(expected: string[], actual: string[]): boolean {
  const exp = expected.map(normalise);
  const act = actual.map(normalise);
  const memo = new Map<string, boolean>();
  const go = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let result: boolean;
    if (i === exp.length) result = j === act.length;
    else if (exp[i]!.trim() === '…') result = go(i + 1, j) || (j < act.length && go(i, j + 1));
    else if (j === act.length) result = false;
    else {
      // A line ending in `…` is shown shortened: its start must match.
      const e = exp[i]!;
      const same = e.endsWith('…') && e.trim() !== '…' ? act[j]!.startsWith(e.slice(0, -1)) : e === act[j];
      result = same && go(i + 1, j + 1);
    }
    memo.set(key, result);
    return result;
  };
  return go(0, 0);
}

function trimTrailingBlank(lines: string[]): string[] {
  const out = [...lines];
  while (out.length > 0 && out[out.length - 1]!.trim() === '') out.pop();
  return out;
}

export interface Workspace {
  dir: string;
  env: Record<string, string>;
  /**
   * The fixed ports the page's commands name (`--port 18787`, and the same port in a URL) → a free port of this
   * machine, taken when first met: a user's own `dnc listen --port 18787` must neither fail the test nor get its pushes.
   */
  ports: Map<number, number>;
  /** The sandbox started for the blocks, if any, and its arguments. */
  sandbox: { args: string; pid: number } | undefined;
  /** Sandboxes the page's own blocks started (`eval "$(dnc sandbox --detach)"`), stopped when the page ends. */
  started: Set<number>;
}

/** A scratch folder with `dnc` on the PATH and a private home, state and cache. */
export function createWorkspace(dir: string): Workspace {
  const shims = path.join(dir, '.bin');
  mkdirSync(shims, { recursive: true });
  writeFileSync(path.join(shims, 'dnc'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(path.join(shims, 'dnc'), 0o755);
  const home = path.join(dir, '.home');
  mkdirSync(home, { recursive: true });
  cpSync(path.join(REPO_ROOT, 'fixtures'), path.join(dir, 'fixtures'), { recursive: true });
  const env: Record<string, string> = {
    PATH: `${shims}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    NO_COLOR: '1',
    COLUMNS: '80',
    LC_ALL: 'C.UTF-8',
    TZ: 'UTC',
  };
  return { dir, env, ports: new Map(), sandbox: undefined, started: new Set() };
}

/** The ports a page's commands listen on (`--port N`, 0 aside): each is replaced by a free one when run. */
export function fixedPorts(blocks: readonly Block[]): Set<number> {
  const ports = new Set<number>();
  for (const b of blocks)
    for (const c of b.commands)
      for (const m of c.text.matchAll(/--port[ =](\d+)\b/g)) if (Number(m[1]) !== 0) ports.add(Number(m[1]));
  return ports;
}

/** A port nothing listens on now (the kernel's pick for port 0), found from a child so the runner stays synchronous. */
function freePort(): number {
  const script =
    "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })";
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim());
}

/** `text` with each of the page's fixed ports (as `--port N`, or `HOST:N` in a URL) turned `to` its stand-in or back. */
function swapPorts(text: string, ports: ReadonlyMap<number, number>, back = false): string {
  let out = text;
  for (const [fixed, free] of ports) {
    const [from, to] = back ? [free, fixed] : [fixed, free];
    out = out.replace(new RegExp(`(--port[ =]|(?:127\\.0\\.0\\.1|localhost|\\[::1\\]):)${from}\\b`, 'g'), `$1${to}`);
  }
  return out;
}

/** The page's fixed ports, each given a free stand-in (once per page: a batch and its listener share one). */
export function takePorts(ws: Workspace, fixed: Iterable<number>): void {
  for (const port of fixed) if (!ws.ports.has(port)) ws.ports.set(port, freePort());
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone (the page stopped it itself)
  }
}

/** Stops the runner's sandbox and every sandbox the page started. */
export function stopSandbox(ws: Workspace): void {
  for (const pid of ws.started) kill(pid);
  ws.started.clear();
  if (ws.sandbox) kill(ws.sandbox.pid);
  ws.sandbox = undefined;
  delete ws.env.DNC_BASE_URL;
  delete ws.env.DNC_API_KEY;
  delete ws.env.DNC_SANDBOX_PID;
}

/** Starts (or keeps) the sandbox a block asks for: a fresh one whenever the arguments change. */
export function ensureSandbox(ws: Workspace, args: string | undefined): void {
  if (args === undefined || (ws.sandbox && ws.sandbox.args === args)) return;
  stopSandbox(ws);
  const out = execFileSync('bash', ['-c', `dnc sandbox --detach --seed 1 ${args}`], {
    cwd: ws.dir,
    env: ws.env,
    encoding: 'utf8',
  });
  for (const m of out.matchAll(/^export (\w+)=(.*)$/gm)) ws.env[m[1]!] = m[2]!.replace(/^'(.*)'$/, '$1');
  ws.sandbox = { args, pid: Number(ws.env.DNC_SANDBOX_PID) };
}

export interface CommandResult {
  command: Command;
  actual: string[];
  ok: boolean;
}

const MARK = '@@dnc-docs-example@@';

const CARRIED = ['DNC_BASE_URL', 'DNC_API_KEY', 'DNC_SANDBOX_PID'] as const;

/**
 * Runs a block's commands in one bash session (so `eval` and `export` carry over, and on to the
 * page's next blocks, as in a reader's shell); stdout and stderr together, as on a terminal.
 */
export function runBlock(ws: Workspace, block: Block): CommandResult[] {
  for (const f of block.files) writeFileSync(path.join(ws.dir, f.name), f.content);
  ensureSandbox(ws, block.sandbox);
  const cwd = block.cwd ? path.join(ws.dir, block.cwd) : ws.dir;
  // The marker between commands keeps the last command's status, so `echo $?` shows the command's.
  const script = block.commands
    .map((c) => `__dnc_status=$?; printf '%s\\n' '${MARK}'; (exit $__dnc_status)\n${swapPorts(c.text, ws.ports)}`)
    .join('\n');
  const carry = CARRIED.map((v) => `printf '${v}=%s\\n' "\${${v}:-}"`).join('\n');
  const wrapped = `exec 2>&1\n${script}\nprintf '%s\\n' '${MARK}'\n${carry}\n`;
  const r = spawnSync('bash', ['-c', wrapped], { cwd, env: ws.env, encoding: 'utf8', timeout: 120_000 });
  const parts = (r.stdout ?? '').split(`${MARK}\n`).slice(1);
  for (const m of (parts[block.commands.length] ?? '').matchAll(/^(DNC_\w+)=(.*)$/gm)) {
    if (m[2] === '') delete ws.env[m[1]!];
    else ws.env[m[1]!] = m[2]!;
  }
  const pid = Number(ws.env.DNC_SANDBOX_PID);
  if (pid > 0 && pid !== ws.sandbox?.pid) ws.started.add(pid);
  return block.commands.map((command, i) => {
    // Shown (and written back with DOCS_UPDATE=1) with the page's own ports.
    const actual = trimTrailingBlank(swapPorts(parts[i] ?? '', ws.ports, true).split('\n'));
    const expected = trimTrailingBlank(command.expected);
    return { command, actual, ok: matches(expected, actual) };
  });
}

/** Rewrites a block in its page with the real output (DOCS_UPDATE=1), keeping the commands. */
export function updateBlock(block: Block, results: CommandResult[], workspaceDir: string): void {
  const text = readFileSync(block.file, 'utf8').split('\n');
  let end = block.line;
  while (!/^```\s*$/.test(text[end]!)) end++;
  const body: string[] = [];
  for (const r of results) {
    body.push(...`$ ${r.command.text}`.split('\n'));
    const output = r.ok
      ? trimTrailingBlank(r.command.expected)
      : r.actual.map((l) => l.split(workspaceDir).join('/home/me/dnc'));
    body.push(...output);
    // A blank line after output, before the next command; none after a command that printed nothing.
    if (output.length > 0) body.push('');
  }
  text.splice(block.line, end - block.line, ...trimTrailingBlank(body));
  writeFileSync(block.file, text.join('\n'));
}
