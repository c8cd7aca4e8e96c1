// A word of a shell command shown to the user (a hint's command line): bare when the shell reads it so, else quoted.

/** `s` as one word of a POSIX shell command: bare when safe, else in single quotes. */
export function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
