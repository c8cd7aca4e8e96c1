// The shape of the code, as docs/architecture.md states it: the layers read from its table, imports pointing down
// only, no circle, libraries reached through their public entries, no patched prototypes, files of a readable size,
// command files that leave their rendering to render/, and errors thrown as DncErrors with a code.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

const SRC = path.join(REPO_ROOT, 'src');
/** The one file allowed past 600 lines: the sandbox's engine is one state machine, read whole. */
const LONG_FILES = new Set(['sandbox/engine.ts']);
/** A command file parses, calls one use case, shows its events: more than this and its rendering belongs in render/. */
const COMMAND_FILE_LINES = 250;
/** `dnc check`'s command, whose blocks and JSON lines are built in one place (src/render/check.ts). */
const CHECK_COMMAND_LINES = 200;

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [path.relative(SRC, p)] : [];
  });
}

interface Import {
  from: string;
  specifier: string;
  line: number;
}

/**
 * Every import of a file, as TypeScript's own parser finds them: static, dynamic, type-only and re-exports (a type
 * import couples modules too), however they are spaced (`import{X}from'./y'` included).
 */
function importsOf(file: string): Import[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  return ts.preProcessFile(text, true, true).importedFiles.map((ref) => ({
    from: file,
    specifier: ref.fileName,
    line: text.slice(0, ref.pos).split('\n').length,
  }));
}

/** src-relative path of a relative import's target. */
function targetOf(i: Import): string {
  return path.normalize(path.join(path.dirname(i.from), i.specifier)).replace(/\.js$/, '.ts');
}

/** The layer table of docs/architecture.md: each name (a module, or a folder ending in /) with its layer. */
function layerTable(): Map<string, number> {
  const doc = readFileSync(path.join(REPO_ROOT, 'docs', 'architecture.md'), 'utf8');
  const layers = new Map<string, number>();
  for (const row of doc.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)) {
    for (const name of row[2]!.matchAll(/`([^`]+)`/g)) layers.set(name[1]!, Number(row[1]));
  }
  return layers;
}

/** A file's layer: the table's longest name that is the file (without .ts) or a folder holding it. */
function layerOf(file: string, table: Map<string, number>): number | undefined {
  const parts = file.replace(/\.ts$/, '').split('/');
  for (let n = parts.length; n > 0; n--) {
    const name = parts.slice(0, n).join('/') + (n < parts.length ? '/' : '');
    if (table.has(name)) return table.get(name);
  }
  return undefined;
}

const files = sourceFiles();
const table = layerTable();
const relative = files.flatMap((f) => importsOf(f).filter((i) => i.specifier.startsWith('.')));

describe('the layers of docs/architecture.md', () => {
  it('name every source file, each once', () => {
    expect(table.size).toBeGreaterThan(20);
    expect(files.filter((f) => layerOf(f, table) === undefined)).toEqual([]);
  });

  it('name only modules and folders that exist', () => {
    const missing = [...table.keys()].filter((name) =>
      name.endsWith('/') ? !existsSync(path.join(SRC, name)) : !existsSync(path.join(SRC, `${name}.ts`)),
    );
    expect(missing).toEqual([]);
  });

  it('are read by a parser that finds imports however they are written', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-arch-'));
    try {
      const probe = 'import{X}from"./y.js";\nexport*from\'./z.js\';\nconst m = await import(\n  "./w.js");\n';
      writeFileSync(path.join(dir, 'probe.ts'), probe);
      const found = importsOf(path.relative(SRC, path.join(dir, 'probe.ts')));
      expect(found.map((i) => [i.specifier, i.line])).toEqual([
        ['./y.js', 1],
        ['./z.js', 2],
        ['./w.js', 4],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are never imported upwards', () => {
    const upward = relative
      .filter((i) => layerOf(targetOf(i), table)! > layerOf(i.from, table)!)
      .map(
        (i) =>
          `src/${i.from}:${i.line} (layer ${layerOf(i.from, table)}) imports ${i.specifier} (layer ` +
          `${layerOf(targetOf(i), table)})`,
      );
    expect(upward).toEqual([]);
  });

  it('hold no import circle', () => {
    const edges = new Map<string, string[]>(files.map((f) => [f, []]));
    for (const i of relative) if (edges.has(targetOf(i))) edges.get(i.from)!.push(targetOf(i));
    // Tarjan's strongly connected components: any with two or more files is a circle.
    let index = 0;
    const order = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const circles: string[][] = [];
    const visit = (v: string) => {
      order.set(v, index);
      low.set(v, index++);
      stack.push(v);
      for (const w of edges.get(v)!) {
        if (!order.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
      }
      if (low.get(v) === order.get(v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          component.push(w);
        } while (w !== v);
        if (component.length > 1) circles.push(component.sort());
      }
    };
    for (const f of files) if (!order.has(f)) visit(f);
    expect(circles).toEqual([]);
  });
});

describe('libraries', () => {
  it('are reached through the entries their package.json exports, never their internal files', () => {
    const deep: string[] = [];
    for (const f of files) {
      for (const i of importsOf(f)) {
        if (i.specifier.startsWith('.') || i.specifier.startsWith('node:')) continue;
        const parts = i.specifier.split('/');
        const name = i.specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
        const subpath = i.specifier.slice(name.length);
        if (subpath === '') continue;
        const manifest = path.join(REPO_ROOT, 'node_modules', name, 'package.json');
        const exported = existsSync(manifest)
          ? (JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown }).exports
          : undefined;
        const entries = exported && typeof exported === 'object' ? Object.keys(exported) : [];
        if (!entries.includes(`.${subpath}`)) deep.push(`src/${f}:${i.line} imports ${i.specifier}`);
      }
    }
    expect(deep).toEqual([]);
  });

  it('are not patched: no code reaches for a prototype (the way to patch a class of another module)', () => {
    const patched = files.flatMap((f) =>
      readFileSync(path.join(SRC, f), 'utf8')
        .split('\n')
        .flatMap((line, n) => (/^\s*(\/\/|\*)/.test(line) || !/\.prototype\b/.test(line) ? [] : [`src/${f}:${n + 1}`])),
    );
    expect(patched).toEqual([]);
  });
});

describe('SQLite files', () => {
  /** The folders that own an SQLite file: the batch journal's and the stores'. */
  const OWNERS = ['journal/', 'stores/'];
  const DRIVERS = new Set(['better-sqlite3', 'node:sqlite', 'sqlite3', 'sqlite']);

  it('are opened only by journal/ and stores/: nobody else imports a driver or opens a -wal or -shm file', () => {
    const outside = files.filter((f) => !OWNERS.some((owner) => f.startsWith(owner)));
    const drivers = outside.flatMap((f) =>
      importsOf(f)
        .filter((i) => DRIVERS.has(i.specifier))
        .map((i) => `src/${f}:${i.line} imports ${i.specifier}`),
    );
    const logs = outside.flatMap((f) =>
      readFileSync(path.join(SRC, f), 'utf8')
        .split('\n')
        .flatMap((line, n) => (/\bopen(Sync)?\([^)]*-(wal|shm)\b/.test(line) ? [`src/${f}:${n + 1}`] : [])),
    );
    expect(drivers).toEqual([]);
    expect(logs).toEqual([]);
  });
});

describe('store interfaces', () => {
  /** Where the stores' shared interfaces are declared: what callers, and both implementations, see. */
  const INTERFACES = ['stores/interfaces.ts', 'stores/suppression-types.ts', 'stores/owner.ts'];
  /** The drivers of the stores: SQLite's and PostgreSQL's. */
  const DRIVERS = /^(better-sqlite3|node:sqlite|sqlite3?|pg|pg-.*|postgres)$/;

  /** The exported interfaces and types of a file that name a driver's type (imported, or `import('driver').X`). */
  function driverTypesIn(file: string, text = readFileSync(path.join(SRC, file), 'utf8')): string[] {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const fromDriver = new Set<string>();
    for (const s of source.statements) {
      if (!ts.isImportDeclaration(s) || !ts.isStringLiteral(s.moduleSpecifier)) continue;
      if (!DRIVERS.test(s.moduleSpecifier.text) || !s.importClause) continue;
      const c = s.importClause;
      if (c.name) fromDriver.add(c.name.text);
      if (c.namedBindings && ts.isNamespaceImport(c.namedBindings)) fromDriver.add(c.namedBindings.name.text);
      if (c.namedBindings && ts.isNamedImports(c.namedBindings))
        for (const e of c.namedBindings.elements) fromDriver.add(e.name.text);
    }
    const found: string[] = [];
    const visit = (declaration: string) => (node: ts.Node) => {
      const at = () => `src/${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} (${declaration})`;
      if (ts.isImportTypeNode(node)) {
        const arg = node.argument;
        if (ts.isLiteralTypeNode(arg) && ts.isStringLiteral(arg.literal) && DRIVERS.test(arg.literal.text))
          found.push(at());
      } else if (ts.isTypeReferenceNode(node)) {
        const name = node.typeName;
        const root = ts.isIdentifier(name) ? name : ts.isQualifiedName(name) ? leftmost(name) : undefined;
        if (root && fromDriver.has(root.text)) found.push(at());
      }
      ts.forEachChild(node, visit(declaration));
    };
    for (const s of source.statements) {
      const exported =
        ts.canHaveModifiers(s) && ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (exported && (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s))) visit(s.name.text)(s);
    }
    return found;
  }

  function leftmost(name: ts.QualifiedName): ts.Identifier {
    let n: ts.EntityName = name;
    while (ts.isQualifiedName(n)) n = n.left;
    return n;
  }

  it('are found naming a driver however it is named', () => {
    const probe =
      "import type BetterSqlite3 from 'better-sqlite3';\nimport type { ClientBase } from 'pg';\n" +
      'export interface A { f(db: BetterSqlite3.Database): void }\nexport interface B { c: ClientBase }\n' +
      "export type C = (db: import('better-sqlite3').Database) => void;\ninterface D { c: ClientBase }\n";
    expect(driverTypesIn('probe.ts', probe)).toEqual([
      'src/probe.ts:3 (A)',
      'src/probe.ts:4 (B)',
      'src/probe.ts:5 (C)',
    ]);
  });

  it('name no driver type (better-sqlite3, pg): a store is used the same whichever implements it', () => {
    expect(INTERFACES.flatMap((f) => driverTypesIn(f))).toEqual([]);
  });

  /**
   * Members of the interface `name` in a file that say which implementation a caller holds: a `kind`, or a type
   * naming one ('local', 'postgres', 'sqlite', 'team'), which a caller could only branch on.
   */
  function kindMembersOf(file: string, name: string, text = readFileSync(path.join(SRC, file), 'utf8')): string[] {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const declaration = source.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name);
    if (!declaration || !ts.isInterfaceDeclaration(declaration)) return [`src/${file}: no interface ${name}`];
    const IMPLEMENTATIONS = /^['"](local|postgres|postgresql|sqlite|team)['"]$/;
    return declaration.members.flatMap((m) => {
      const member = m.name?.getText(source) ?? '';
      const literal = (n: ts.Node): boolean =>
        (ts.isLiteralTypeNode(n) && IMPLEMENTATIONS.test(n.literal.getText(source))) ||
        ts.forEachChild(n, literal) === true;
      return /^(kind|type|implementation)$/.test(member) || literal(m) ? [`${name}.${member}`] : [];
    });
  }

  it('are found saying which implementation they are', () => {
    const probe =
      "export interface Stores { readonly kind: 'local' | 'postgres'; where: string; f(): 'team' | null }\n";
    expect(kindMembersOf('probe.ts', 'Stores', probe)).toEqual(['Stores.kind', 'Stores.f']);
  });

  it('never say which implementation a caller holds: the difference is behind the interface, no use case asks', () => {
    expect(kindMembersOf('stores/owner.ts', 'Stores')).toEqual([]);
  });

  it("hide their implementations: only stores/ imports the team store's (stores/postgres/) or PostgreSQL's driver", () => {
    const reached = files
      .filter((f) => !f.startsWith('stores/'))
      .flatMap((f) =>
        importsOf(f)
          .filter((i) =>
            i.specifier.startsWith('.') ? targetOf(i).startsWith('stores/postgres/') : /^pg(-|$)/.test(i.specifier),
          )
          .map((i) => `src/${f}:${i.line} imports ${i.specifier}`),
      );
    expect(reached).toEqual([]);
  });
});

describe('source files', () => {
  it(`stay within 600 lines (but ${[...LONG_FILES].join(', ')}) and 120 columns`, () => {
    const long: string[] = [];
    const wide: string[] = [];
    for (const f of files) {
      const lines = readFileSync(path.join(SRC, f), 'utf8').replace(/\n$/, '').split('\n');
      if (lines.length > 600 && !LONG_FILES.has(f)) long.push(`src/${f}: ${lines.length} lines`);
      lines.forEach((line, n) => {
        if ([...line].length > 120) wide.push(`src/${f}:${n + 1}: ${[...line].length} columns`);
      });
    }
    expect(long).toEqual([]);
    expect(wide).toEqual([]);
  });
});

describe('command files', () => {
  const lines = (f: string) => readFileSync(path.join(SRC, f), 'utf8').replace(/\n$/, '').split('\n').length;

  it(`stay within ${COMMAND_FILE_LINES} lines, commands/check.ts within ${CHECK_COMMAND_LINES}`, () => {
    const commands = files.filter((f) => f.startsWith('commands/'));
    expect(commands.length).toBeGreaterThan(10);
    const long = commands
      .filter((f) => lines(f) > (f === 'commands/check.ts' ? CHECK_COMMAND_LINES : COMMAND_FILE_LINES))
      .map((f) => `src/${f}: ${lines(f)} lines`);
    expect(long).toEqual([]);
  });
});

/** Where a file throws a plain `Error` (`throw new Error(…)` or `throw Error(…)`), as TypeScript's parser reads it. */
function plainErrorThrows(file: string, text = readFileSync(path.join(SRC, file), 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isThrowStatement(node)) {
      const e = node.expression;
      const made = ts.isNewExpression(e) || ts.isCallExpression(e);
      if (made && ts.isIdentifier(e.expression) && e.expression.text === 'Error')
        found.push(`src/${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('errors', () => {
  it('are found however a plain Error is thrown', () => {
    const probe =
      'if (a)\n  throw new Error("x");\nthrow Error(`y`);\nthrow new DncError("E_USAGE", "z");\n// throw new Error\n';
    expect(plainErrorThrows('probe.ts', probe)).toEqual(['src/probe.ts:2', 'src/probe.ts:3']);
  });

  // A user-facing failure is a DncError with a code (src/errors.ts); a broken internal invariant, an internalError
  // (E_INTERNAL: a bug in dnc, said so). The sandbox (the service's emulator) is not dnc's CLI and keeps its own.
  it('thrown in src/ are DncErrors with a code: no plain Error outside the sandbox', () => {
    const plain = files.filter((f) => !f.startsWith('sandbox/')).flatMap((f) => plainErrorThrows(f));
    expect(plain).toEqual([]);
  });
});

/** The longest a function may be outside the sandbox: past this it is several steps that want names of their own. */
const FUNCTION_LINES = 120;
/**
 * Every function of a file longer than FUNCTION_LINES, as TypeScript's parser finds them: declarations, methods,
 * constructors, accessors, arrows and function expressions, each counted from its first line to its last.
 */
function longFunctions(file: string, text = readFileSync(path.join(SRC, file), 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      const lines = last - first + 1;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
      if (lines > FUNCTION_LINES) found.push(`src/${file}:${first} ${name}: ${lines} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('functions', () => {
  it('are measured however they are written', () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  f(${i});`).join('\n');
    const probe =
      `function a() {\n${body(FUNCTION_LINES + 1)}\n}\n` +
      `const b = () => {\n${body(FUNCTION_LINES)}\n};\n` +
      `class C {\n  m() {\n${body(FUNCTION_LINES + 1)}\n  }\n}\n` +
      `const d = [1].map(function () {\n${body(FUNCTION_LINES + 2)}\n});\n`;
    expect(longFunctions('probe.ts', probe)).toEqual([
      `src/probe.ts:1 a: ${FUNCTION_LINES + 1} lines`,
      `src/probe.ts:${2 * FUNCTION_LINES + 3} m: ${FUNCTION_LINES + 1} lines`,
      `src/probe.ts:${3 * FUNCTION_LINES + 5} (anonymous): ${FUNCTION_LINES + 2} lines`,
    ]);
  });

  it(`stay within ${FUNCTION_LINES} lines outside the sandbox`, () => {
    const long = files.filter((f) => !f.startsWith('sandbox/')).flatMap((f) => longFunctions(f));
    expect(long).toEqual([]);
  });
});
