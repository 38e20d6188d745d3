import { describe, expect, it } from 'vitest';
import { findUnstorableText } from '../../src/http/storable-text.validator.js';

describe('findUnstorableText', () => {
  it('finds NUL and unpaired surrogates, by JSON pointer, in values and property names', () => {
    const data = { ok: 'Болд 😀', nul: 'a\u0000', list: ['fine', '\ud800', 'x\udc00'], 'a/b': { '~k\u0000': 1, deep: [['\udbff\udbff']] } };
    expect(findUnstorableText(data).sort()).toEqual(['/a~1b/deep/0/0', '/a~1b/~0k\u0000', '/list/1', '/list/2', '/nul'].sort());
  });

  it('accepts well-formed text, including surrogate pairs, and non-strings', () => {
    expect(findUnstorableText({ a: '\ud83d\ude00', b: 1, c: null, d: [true, { e: 'Ё' }] })).toEqual([]);
    expect(findUnstorableText(undefined)).toEqual([]);
  });

  it('skips what it is told to, and the root itself when asked', () => {
    expect(findUnstorableText({ a: '\u0000', b: ['\u0000'] }, new Set(['/b']))).toEqual(['/a']);
    expect(findUnstorableText('\u0000', new Set(['']))).toEqual([]);
    expect(findUnstorableText('\u0000')).toEqual(['']);
  });
});
