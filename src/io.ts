// Injected I/O: the streams a command reads and writes, whether they are terminals, and colour.
import { fstatSync, writeSync } from 'node:fs';
import { PassThrough, Readable, Writable } from 'node:stream';

/** SIGINT/SIGTERM as cancellation: a command subscribes; with no subscriber, main exits 130 at once. */
export interface Interrupts {
  /** Registers a handler; returns a function that removes it. Handlers get the count of interrupts so far. */
  on(handler: (count: number) => void): () => void;
}

export interface IO {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  /** Colour on stdout (a terminal, and NO_COLOR unset). */
  stdoutColor: boolean;
  /** Colour on stderr (a terminal, and NO_COLOR unset). */
  stderrColor: boolean;
  /** Terminal width for tables, 80 when unknown. */
  columns: number;
}

type Env = Record<string, string | undefined>;

function colourAllowed(env: Env, isTTY: boolean): boolean {
  // https://no-color.org: any non-empty NO_COLOR disables colour; FORCE_COLOR=0 likewise.
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR === '0') return false;
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

/**
 * Whether `fd` may be a terminal. A pipe or a file never is, and fstat says so without setting up process.stdout:
 * on a pipe that is a socket, and loading net for it was ≈ 3 ms of a 50 ms `dnc --help | less`.
 */
export function mayBeTerminal(fd: 1 | 2): boolean {
  try {
    return fstatSync(fd).isCharacterDevice();
  } catch {
    return true; // unknown: let the stream find out
  }
}

/**
 * process.stdout or process.stderr as a stream set up when first needed. Until then a write goes straight to the
 * file descriptor, as Node's own stream does for files and, on Linux, pipes: help and one-line answers never set
 * up a stream. Any other use (pipe into it, listen, end), or a write the descriptor refuses (a full non-blocking
 * pipe, EPIPE), sets up the real stream, and from then on everything goes through it, in order; its errors are
 * the stream's, handled by `onStream`'s listeners as before.
 */
function lazyStdio(fd: 1 | 2, onStream: (stream: NodeJS.WriteStream, fd: 1 | 2) => void): Writable {
  let stream: NodeJS.WriteStream | undefined;
  // The stream's own write, kept: a spinner (ora) replaces stream.write with a hook that calls the write it found,
  // which may be this module's.
  let streamWrite: NodeJS.WriteStream['write'] | undefined;
  const real = (): NodeJS.WriteStream => {
    if (stream === undefined) {
      stream = fd === 1 ? process.stdout : process.stderr;
      streamWrite = stream.write;
      onStream(stream, fd);
    }
    return stream;
  };
  function write(
    chunk: string | Uint8Array,
    encoding?: BufferEncoding | ((err?: Error | null) => void),
    callback?: (err?: Error | null) => void,
  ): boolean {
    if (typeof encoding === 'function') [encoding, callback] = [undefined, encoding];
    if (stream === undefined) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding ?? 'utf8') : chunk;
      let done = 0;
      try {
        while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
        if (callback) process.nextTick(callback, null);
        return true;
      } catch {
        const now = real(); // sets streamWrite
        return streamWrite!.call(now, bytes.subarray(done), undefined, callback);
      }
    }
    return streamWrite!.call(stream, chunk, encoding as BufferEncoding, callback);
  }
  // Stand-ins for what writeLine asks before it writes; anything else is the real stream's, write (hooked or not) too.
  const before: Record<PropertyKey, unknown> = { write, destroyed: false, writableEnded: false, writable: true };
  return new Proxy({} as Writable, {
    get(_, prop) {
      if (stream === undefined && Object.hasOwn(before, prop)) return before[prop];
      const value = Reflect.get(real(), prop);
      return typeof value === 'function' ? value.bind(stream) : value;
    },
    set: (_, prop, value) => Reflect.set(real(), prop, value),
    has: (_, prop) => Reflect.has(real(), prop),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
}

/** The width of a terminal that cannot tell its own. */
export const DEFAULT_COLUMNS = 80;

/** A width a terminal reported, or undefined when it reported none (0, or not a number). */
export function knownWidth(columns: number | undefined): number | undefined {
  return columns !== undefined && Number.isFinite(columns) && columns > 0 ? columns : undefined;
}

/** The process's standard streams; `onStream` is called with stdout or stderr when it is set up (see lazyStdio). */
export function processIO(env: Env, onStream: (stream: NodeJS.WriteStream, fd: 1 | 2) => void = () => {}): IO {
  const stdout = lazyStdio(1, onStream);
  const stderr = lazyStdio(2, onStream);
  // Asked of the lazy streams, so that a terminal's stream is set up with its listeners like any other.
  const isTTY = (fd: 1 | 2) =>
    mayBeTerminal(fd) && Boolean(((fd === 1 ? stdout : stderr) as Partial<NodeJS.WriteStream>).isTTY);
  let stdoutIsTTY: boolean | undefined;
  let stderrIsTTY: boolean | undefined;
  return {
    // process.stdin is set up when first read (a socket when stdin is a pipe): only commands that read it pay for it.
    get stdin() {
      return process.stdin;
    },
    stdout,
    stderr,
    get stdinIsTTY() {
      return Boolean(process.stdin.isTTY);
    },
    get stdoutIsTTY() {
      return (stdoutIsTTY ??= isTTY(1));
    },
    get stderrIsTTY() {
      return (stderrIsTTY ??= isTTY(2));
    },
    get stdoutColor() {
      return colourAllowed(env, this.stdoutIsTTY);
    },
    get stderrColor() {
      return colourAllowed(env, this.stderrIsTTY);
    },
    // Only a terminal has a width; one that reports none (0 under `script` or `docker -t` without a size) is 80 wide.
    get columns() {
      const columns = (fd: 1 | 2) =>
        mayBeTerminal(fd) ? ((fd === 1 ? stdout : stderr) as Partial<NodeJS.WriteStream>).columns : undefined;
      return knownWidth(columns(1)) ?? knownWidth(columns(2)) ?? DEFAULT_COLUMNS;
    },
  };
}

/** Buffers standing in for a process's streams, for in-process command tests. */
export interface TestIO extends IO {
  out(): string;
  err(): string;
}

export interface TestIOOptions {
  stdin?: string;
  /** Pretend all three streams are terminals (default false: piped, as in CI). */
  tty?: boolean;
  color?: boolean;
  columns?: number;
}

export function createTestIO(options: TestIOOptions = {}): TestIO {
  const outChunks: string[] = [];
  const errChunks: string[] = [];
  const sink = (chunks: string[]) =>
    new Writable({
      write(chunk: Buffer | string, _enc, callback) {
        chunks.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
        callback();
      },
    });
  const stdin = new PassThrough();
  stdin.end(options.stdin ?? '');
  const tty = options.tty ?? false;
  return {
    stdin: stdin as Readable,
    stdout: sink(outChunks),
    stderr: sink(errChunks),
    stdinIsTTY: tty && options.stdin === undefined,
    stdoutIsTTY: tty,
    stderrIsTTY: tty,
    stdoutColor: options.color ?? false,
    stderrColor: options.color ?? false,
    columns: options.columns ?? 100,
    out: () => outChunks.join(''),
    err: () => errChunks.join(''),
  };
}

/** Writes a line to a stream; the stream may be a closed pipe (`dnc … | head`), which is not an error. */
export function writeLine(stream: Writable, line: string): void {
  if (stream.destroyed || stream.writableEnded) return;
  stream.write(line.endsWith('\n') ? line : `${line}\n`);
}

/** Progress that is a spinner on a terminal, a plain line every few seconds when piped, nothing with --quiet. */
export interface Progress {
  /** The current state, e.g. "1,200/20,000 · 640/s · ETA 28s"; throttled when piped. */
  update(text: string): void;
  /** A line that should stay (not overwritten by the spinner). Suppressed by --quiet. */
  info(text: string): void;
  /** Ends the spinner (or prints nothing more when piped). */
  stop(): void;
}

export interface ProgressOptions {
  quiet: boolean;
  /** Minimum time between plain lines when stderr is not a terminal. */
  plainIntervalMs?: number;
  now?: () => number;
}

export async function createProgress(io: IO, options: ProgressOptions): Promise<Progress> {
  if (options.quiet) {
    return { update() {}, info() {}, stop() {} };
  }
  // A terminal that reports 0 columns (e.g. `script` or `docker -t` without a size) sends ora into an
  // endless redraw loop: such a terminal gets the plain lines.
  const zeroWidth = (io.stderr as { columns?: number }).columns === 0;
  if (!io.stderrIsTTY || zeroWidth) {
    const interval = options.plainIntervalMs ?? 5_000;
    const now = options.now ?? Date.now;
    let last = -Infinity;
    return {
      update(text) {
        const t = now();
        if (t - last < interval) return;
        last = t;
        writeLine(io.stderr, text);
      },
      info(text) {
        writeLine(io.stderr, text);
      },
      stop() {},
    };
  }
  // ora is only loaded where a spinner can be shown, which keeps piped and --help runs light.
  const { default: ora } = await import('ora');
  const spinner = ora({ stream: io.stderr, isEnabled: true, discardStdin: false, color: 'cyan' });
  let started = false;
  return {
    update(text) {
      if (!started) {
        spinner.start(text);
        started = true;
      } else spinner.text = text;
    },
    info(text) {
      if (started) spinner.clear();
      writeLine(io.stderr, text);
      if (started) spinner.render();
    },
    stop() {
      if (started) spinner.stop();
      started = false;
    },
  };
}
