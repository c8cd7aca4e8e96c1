// What `dnc help` needs when it is registered: its topics' names and the exit-status lines every command's help ends
// with (the topics' text is src/render/help-topics.ts, loaded when a topic is asked for).
import { EXIT_STATUS_MEANINGS, type ExitCodeValue } from '../errors.js';

export const TOPIC_NAMES = ['exit-codes', 'environment', 'results', 'formats'] as const;
export type TopicName = (typeof TOPIC_NAMES)[number];

/** `  CODE meaning` for each status, the command's own meaning where it has one, else the general meaning. */
export function exitStatusLines(
  statuses: Partial<Record<ExitCodeValue, string | null>> = Object.fromEntries(
    Object.keys(EXIT_STATUS_MEANINGS).map((c) => [c, null]),
  ),
): string[] {
  return (Object.entries(statuses) as Array<[string, string | null]>)
    .map(([code, meaning]) => [Number(code) as ExitCodeValue, meaning] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([code, meaning]) => `  ${String(code).padEnd(4)} ${meaning ?? EXIT_STATUS_MEANINGS[code]}`);
}
