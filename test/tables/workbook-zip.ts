// Workbooks made part by part for attacks and edge cases no spreadsheet writes: the XML given, zipped as Excel zips it.
import { writeFileSync } from 'node:fs';
import { ZipWriter } from '../../src/tables/xlsx-writer.js';

/** A zip archive of the parts given (name → text), each deflated, written by dnc's own zip writer. */
export async function zipParts(parts: Record<string, string>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const zip = new ZipWriter({ write: (bytes) => void chunks.push(bytes) });
  for (const [name, text] of Object.entries(parts)) {
    const entry = await zip.entry(name);
    await entry.write(text);
    await entry.close();
  }
  await zip.finish();
  return Buffer.concat(chunks);
}

const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** One sheet of a hand-made workbook: its tab name and its `<sheetData>` (or, for a chart sheet, nothing). */
export interface HandSheet {
  name: string;
  rows?: string;
  chart?: boolean;
  /** `hidden` or `veryHidden`. */
  state?: string;
  /** The `<col>` elements of its `<cols>` (column widths), before its rows. */
  cols?: string;
}

/** Where and how the workbook part is written (by default `xl/workbook.xml`, with no `_rels/.rels`). */
export interface HandPackage {
  /** The workbook part's folder, named by a `_rels/.rels` written beside it (`wtf` for `wtf/workbook.xml`). */
  folder?: string;
  /** XML before `<sheets>` (`<workbookPr …/><bookViews>…</bookViews>`), and after it (`<calcPr …/><extLst>…`). */
  before?: string;
  after?: string;
  /** More parts, stored after the workbook's own (name → text). */
  extra?: Record<string, string>;
}

/**
 * Writes a workbook of the sheets given, in tab order, with optional shared strings and styles (the XML of
 * `<numFmts>` and `<cellXfs>`). Cells are written as the caller spells them (`<c r="A1" t="inlineStr">…`).
 */
export async function writeHandMadeWorkbook(
  file: string,
  o: { sheets: HandSheet[]; sharedStrings?: string[]; styles?: string } & HandPackage,
): Promise<void> {
  const parts: Record<string, string> = {};
  const xl = o.folder ?? 'xl';
  const state = (s: HandSheet) => (s.state ? ` state="${s.state}"` : '');
  const sheetTags = o.sheets
    .map((s, i) => `<sheet name="${s.name}" sheetId="${i + 1}"${state(s)} r:id="rId${i + 1}"/>`)
    .join('');
  parts[`${xl}/workbook.xml`] =
    `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="${MAIN}" xmlns:r="${REL}">${o.before ?? ''}<sheets>${sheetTags}</sheets>${o.after ?? ''}</workbook>`;
  if (o.folder) {
    const rel = `<Relationship Id="rId1" Type="${REL}/officeDocument" Target="${o.folder}/workbook.xml"/>`;
    parts['_rels/.rels'] =
      `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rel}</Relationships>`;
  }
  const rels = o.sheets.map((s, i) =>
    s.chart
      ? `<Relationship Id="rId${i + 1}" Type="${REL}/chartsheet" Target="chartsheets/sheet${i + 1}.xml"/>`
      : `<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`,
  );
  if (o.sharedStrings) rels.push(`<Relationship Id="rSst" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/>`);
  if (o.styles) rels.push(`<Relationship Id="rSty" Type="${REL}/styles" Target="styles.xml"/>`);
  parts[`${xl}/_rels/workbook.xml.rels`] =
    `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels.join('')}</Relationships>`;
  o.sheets.forEach((s, i) => {
    if (s.chart)
      parts[`${xl}/chartsheets/sheet${i + 1}.xml`] =
        `<?xml version="1.0" encoding="UTF-8"?><chartsheet xmlns="${MAIN}"/>`;
    else
      parts[`${xl}/worksheets/sheet${i + 1}.xml`] =
        `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="${MAIN}">${s.cols ? `<cols>${s.cols}</cols>` : ''}<sheetData>${s.rows ?? ''}</sheetData></worksheet>`;
  });
  if (o.sharedStrings) {
    const si = o.sharedStrings.map((t) => `<si><t xml:space="preserve">${t}</t></si>`).join('');
    parts[`${xl}/sharedStrings.xml`] =
      `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="${MAIN}" count="${o.sharedStrings.length}" uniqueCount="${o.sharedStrings.length}">${si}</sst>`;
  }
  if (o.styles)
    parts[`${xl}/styles.xml`] =
      `<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="${MAIN}">${o.styles}</styleSheet>`;
  writeFileSync(file, await zipParts({ ...parts, ...o.extra }));
}

/** An inline text cell. */
export const text = (ref: string, value: string): string => `<c r="${ref}" t="inlineStr"><is><t>${value}</t></is></c>`;
