// The repeated-name scanner against JSON texts whose repeats are known by construction.
import { describe, expect, it } from 'vitest';
import { repeatedKey } from '../../src/service/repeated-keys.js';

describe('repeatedKey', () => {
  it.each<[string, string | null]>([
    ['{"a":1,"b":2}', null],
    ['{"do_not_call":true,"do_not_call":false}', 'do_not_call'],
    ['{"a":"x\\"y","a":1}', 'a'],
    ['{"cost":{"x":1,"x":2}}', 'cost.x'],
    ['{"data":[{"id":1,"id":2}]}', 'data[].id'],
    ['{"data":[{"id":1},{"id":2}]}', null],
    ['{"a_b":1,"a\\u005fb":2}', 'a_b'],
    ['{"s":"{\\"a\\":1,\\"a\\":2}"}', null],
    ['[1,{"k":[],"k":2}]', '[].k'],
    ['{"a":{"b":1},"c":{"b":2}}', null],
    ['{"e":"\\\\","e":1}', 'e'],
    [' { "x" : [ { } , { "y" : 1 , "y" : 2 } ] } ', 'x[].y'],
  ])('%s → %s', (text, want) => {
    // Every case is valid JSON: the scanner is only ever given text JSON.parse accepted.
    expect(() => JSON.parse(text)).not.toThrow();
    expect(repeatedKey(text)).toBe(want);
  });
});
