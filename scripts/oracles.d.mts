export declare const PYTHON_CANDIDATES: readonly string[];
export declare const MISSING_OPENPYXL: string;
/** The first candidate Python that imports openpyxl, or null. */
export declare function findPython(): string | null;
