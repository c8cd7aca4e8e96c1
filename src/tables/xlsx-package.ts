// A workbook as a package (ECMA-376 Part 2): its parts found through their relationships (`_rels/.rels` names the
// workbook part, the workbook's relationships name its sheets, styles and shared strings), and the workbook part read
// with its namespaces resolved, so that an extension's element of the same local name (`<x15:workbookPr>` in
// `extLst`) is not taken for SpreadsheetML's own.
import { StringDecoder } from 'node:string_decoder';
import { attributes, XmlFormatError, XmlScanner, type XmlHandler } from './xlsx-xml.js';
import type { ZipEntry, ZipFile } from './zip-file.js';

/** SpreadsheetML's namespace: transitional (what Excel writes) and strict. */
const MAIN = new Set([
  'http://schemas.openxmlformats.org/spreadsheetml/2006/main',
  'http://purl.oclc.org/ooxml/spreadsheetml/main',
]);
/** The namespace of relationship ids (`r:id`): transitional and strict. */
const RELATIONSHIPS = new Set([
  'http://schemas.openxmlformats.org/officeDocument/2006/relationships',
  'http://purl.oclc.org/ooxml/officeDocument/relationships',
]);
const XML = 'http://www.w3.org/XML/1998/namespace';

/** The namespace declarations in scope, element by element (Namespaces in XML 1.0). */
class NamespaceScope {
  private current = new Map<string, string>([['xml', XML]]);
  private readonly saved: Array<Map<string, string> | undefined> = [];

  /** Enters an element: its own `xmlns` and `xmlns:p` attributes are in scope until its end. */
  enter(attrs: Map<string, string>): void {
    let declared: Map<string, string> | undefined;
    for (const [name, uri] of attrs) {
      if (name !== 'xmlns' && !name.startsWith('xmlns:')) continue;
      declared ??= new Map(this.current);
      declared.set(name === 'xmlns' ? '' : name.slice(6), uri);
    }
    this.saved.push(declared ? this.current : undefined);
    if (declared) this.current = declared;
  }

  leave(): void {
    const previous = this.saved.pop();
    if (previous) this.current = previous;
  }

  /** An element's namespace and local name (an unprefixed one is in the default namespace). */
  element(qualified: string): { uri: string | undefined; local: string } {
    const colon = qualified.indexOf(':');
    if (colon < 0) return { uri: this.current.get(''), local: qualified };
    return { uri: this.current.get(qualified.slice(0, colon)), local: qualified.slice(colon + 1) };
  }

  /** An attribute's value by namespace and local name (an unprefixed attribute is in no namespace). */
  attribute(attrs: Map<string, string>, uris: ReadonlySet<string>, local: string): string | undefined {
    for (const [name, value] of attrs) {
      const colon = name.indexOf(':');
      if (colon < 0 || name.slice(colon + 1) !== local) continue;
      const uri = this.current.get(name.slice(0, colon));
      if (uri !== undefined && uris.has(uri)) return value;
    }
    return undefined;
  }
}

/** A sheet of the workbook, in tab order. */
export interface WorkbookSheet {
  name: string;
  /** The relationship it is stored under (`r:id`). */
  rId: string | undefined;
  /** `hidden` or `veryHidden` (Excel shows neither tab); absent for a visible sheet. */
  state: string | undefined;
}

/**
 * The workbook part (`xl/workbook.xml`): its sheets in tab order, the date system, the tab Excel opens on (the
 * first window's active tab), and whether it asks to be calculated when opened. Elements count only in SpreadsheetML's
 * namespace and in their place (an extension of Excel 2013 writes a `workbookPr` of its own into `extLst`).
 */
export class WorkbookHandler implements XmlHandler {
  readonly qualifiedNames = true;
  sheets: WorkbookSheet[] = [];
  date1904 = false;
  /** The 0-based index into `sheets` of the first window's active tab. */
  activeTab = 0;
  /** `<calcPr fullCalcOnLoad="1">`: the formulas are to be calculated when the workbook is opened. */
  fullCalcOnLoad = false;
  private readonly ns = new NamespaceScope();
  /** The path of SpreadsheetML elements open (`workbook`, `bookViews` …); a foreign element is ''. */
  private readonly path: string[] = [];
  private views = 0;

  open(qualified: string, src: string, from: number, to: number): void {
    const attrs = attributes(src, from, to);
    this.ns.enter(attrs);
    const { uri, local } = this.ns.element(qualified);
    const name = uri !== undefined && MAIN.has(uri) ? local : '';
    const parent = this.path[this.path.length - 1];
    this.path.push(name);
    const flag = (v: string | undefined) => v === '1' || v === 'true';
    if (name === 'sheet' && parent === 'sheets') {
      this.sheets.push({
        name: attrs.get('name') ?? `Sheet${this.sheets.length + 1}`,
        rId: this.ns.attribute(attrs, RELATIONSHIPS, 'id'),
        state: attrs.get('state') === 'hidden' || attrs.get('state') === 'veryHidden' ? attrs.get('state') : undefined,
      });
    } else if (name === 'workbookPr' && parent === 'workbook') {
      this.date1904 = flag(attrs.get('date1904'));
    } else if (name === 'workbookView' && parent === 'bookViews' && this.views++ === 0) {
      const tab = Number(attrs.get('activeTab') ?? '0');
      this.activeTab = Number.isInteger(tab) && tab >= 0 ? tab : 0;
    } else if (name === 'calcPr' && parent === 'workbook') {
      this.fullCalcOnLoad = flag(attrs.get('fullCalcOnLoad'));
    }
  }
  close(): void {
    this.path.pop();
    this.ns.leave();
  }
  text(): void {}
  cdata(): void {}
}

/** A part's relationships: by Id, the target and type. */
export class RelationshipsHandler implements XmlHandler {
  byId = new Map<string, { target: string; type: string; external: boolean }>();
  open(name: string, src: string, from: number, to: number): void {
    if (name !== 'Relationship') return;
    const a = attributes(src, from, to);
    const id = a.get('Id');
    const external = a.get('TargetMode') === 'External';
    if (id !== undefined) this.byId.set(id, { target: a.get('Target') ?? '', type: a.get('Type') ?? '', external });
  }
  close(): void {}
  text(): void {}
  cdata(): void {}

  /** The first internal relationship of a type (its last path segment: `officeDocument`, `styles` …). */
  ofType(type: string): { target: string; type: string } | undefined {
    for (const rel of this.byId.values()) if (!rel.external && rel.type.endsWith(`/${type}`)) return rel;
    return undefined;
  }
}

/**
 * Where a relationship's target is in the package: relative to the source part's folder, or absolute with a leading
 * `/`; percent-escapes decoded (a part name is a URI: `my%20sheet.xml`).
 */
export function resolveTarget(folder: string, target: string): string {
  let t = target;
  try {
    t = decodeURIComponent(target);
  } catch {
    // Not an escaped URI: taken as written.
  }
  const parts = (t.startsWith('/') ? t.slice(1) : folder ? `${folder}/${t}` : t).split('/');
  const out: string[] = [];
  for (const part of parts) {
    if (part === '..') out.pop();
    else if (part !== '.' && part !== '') out.push(part);
  }
  return out.join('/');
}

/** A part's folder (`xl` for `xl/workbook.xml`, '' at the root) and where its relationships are. */
export function partPlaces(part: string): { folder: string; rels: string } {
  const slash = part.lastIndexOf('/');
  const folder = slash < 0 ? '' : part.slice(0, slash);
  const base = part.slice(slash + 1);
  return { folder, rels: `${folder ? `${folder}/` : ''}_rels/${base}.rels` };
}

/** The default sheet: the first window's active tab when it is a visible worksheet, else the first visible one. */
export function defaultSheet<T extends { state: string | undefined; worksheet: boolean }>(
  sheets: readonly T[],
  activeTab: number,
): T | undefined {
  const active = sheets[activeTab];
  if (active && active.worksheet && active.state === undefined) return active;
  return sheets.find((s) => s.worksheet && s.state === undefined);
}

/** A part held whole (the shared strings) that inflates like a zip bomb: the caller names the file. */
export class PartLimitError extends Error {
  override name = 'PartLimitError';
}

/**
 * How far a part held whole may inflate: 100 times its compressed bytes (Apache POI's bound, ZipSecureFile's
 * minimum inflate ratio of 1%), once past 16 MiB. A spreadsheet's shared strings are distinct texts and deflate a
 * few times; a table of 0.8 MB that inflates to 420 MB is written to exhaust the reader's memory.
 */
const INFLATE_RATIO = 100;
const INFLATE_GRACE_BYTES = 16 << 20;

export function inflateLimit(zip: ZipFile, entry: ZipEntry): number {
  return Math.max(INFLATE_GRACE_BYTES, INFLATE_RATIO * Math.min(entry.compressedSize, zip.size));
}

/**
 * Feeds one part of the workbook through a handler, chunk by chunk as it is inflated; stops early when `each` says so.
 * `maxBytes`: the most it may inflate to (see inflateLimit), counted as it is read, not as its directory claims.
 */
export async function scanPart(
  zip: ZipFile,
  entry: ZipEntry,
  handler: XmlHandler,
  each?: () => boolean | void,
  maxBytes = Infinity,
): Promise<void> {
  const stream = await zip.stream(entry);
  const scanner = new XmlScanner(handler);
  const decoder = new StringDecoder('utf8');
  let inflated = 0;
  try {
    for await (const chunk of stream) {
      inflated += (chunk as Buffer).length;
      if (inflated > maxBytes) {
        const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
        throw new PartLimitError(
          `${entry.name} inflates past ${mb(maxBytes)} from ${mb(entry.compressedSize)} (more than ${INFLATE_RATIO} ` +
            `times its compressed size: a zip bomb, not what a spreadsheet writes)`,
        );
      }
      scanner.write(decoder.write(chunk as Buffer));
      if (each?.() === true) return;
    }
    scanner.write(decoder.end());
    scanner.end();
    each?.();
  } finally {
    stream.destroy();
  }
}

/** A sheet of the workbook: its tab, and for a worksheet its part and its 1-based position among the worksheets. */
export interface PackageSheet {
  name: string;
  state: string | undefined;
  /** Its part when it is a worksheet (a chart sheet has no cells). */
  entry: ZipEntry | undefined;
  worksheet: boolean;
  /** Among the worksheets, hidden ones counted (0 for another kind). */
  position: number;
}

/** What the workbook part and its relationships say: the sheets and the parts their cells need. */
export interface WorkbookPackage {
  sheets: PackageSheet[];
  activeTab: number;
  date1904: boolean;
  fullCalcOnLoad: boolean;
  sharedStrings: ZipEntry | undefined;
  styles: ZipEntry | undefined;
}

const OFFICE_DOCUMENT = 'officeDocument';

/**
 * Reads the package's directory of parts: the workbook part named by `_rels/.rels` (at `xl/workbook.xml` when the
 * package has no such relationship, as some writers leave it out), its relationships, and the sheets they name.
 */
export async function readPackage(zip: ZipFile): Promise<WorkbookPackage> {
  let workbookPart = 'xl/workbook.xml';
  const root = zip.entry('_rels/.rels');
  if (root) {
    const rels = new RelationshipsHandler();
    await scanPart(zip, root, rels);
    const office = rels.ofType(OFFICE_DOCUMENT);
    if (office && zip.entry(resolveTarget('', office.target))) workbookPart = resolveTarget('', office.target);
  }
  const workbookEntry = zip.entry(workbookPart);
  if (!workbookEntry) throw new XmlFormatError(`it has no workbook part (no ${workbookPart})`);
  const book = new WorkbookHandler();
  await scanPart(zip, workbookEntry, book);
  const { folder, rels: relsPart } = partPlaces(workbookPart);
  const rels = new RelationshipsHandler();
  const relsEntry = zip.entry(relsPart);
  if (relsEntry) await scanPart(zip, relsEntry, rels);
  const partOf = (type: string, fallback: string): ZipEntry | undefined => {
    const rel = rels.ofType(type);
    return zip.entry(rel ? resolveTarget(folder, rel.target) : `${folder}/${fallback}`);
  };
  let position = 0;
  const sheets = book.sheets.map((sheet, i): PackageSheet => {
    const rel = sheet.rId !== undefined ? rels.byId.get(sheet.rId) : undefined;
    // A sheet without a relationship is where Excel puts the n-th worksheet (a writer that left the rels out).
    const entry =
      rel && rel.type.endsWith('/worksheet')
        ? zip.entry(resolveTarget(folder, rel.target))
        : rel
          ? undefined
          : zip.entry(`${folder}/worksheets/sheet${i + 1}.xml`);
    return { name: sheet.name, state: sheet.state, entry, worksheet: !!entry, position: entry ? ++position : 0 };
  });
  return {
    sheets,
    activeTab: book.activeTab,
    date1904: book.date1904,
    fullCalcOnLoad: book.fullCalcOnLoad,
    sharedStrings: partOf('sharedStrings', 'sharedStrings.xml'),
    styles: partOf('styles', 'styles.xml'),
  };
}
