import { describe, expect, it } from 'vitest';
import { SlidingLog } from '../../src/domain/sliding-log.js';

const contents = (log: SlidingLog) => Array.from({ length: log.size }, (_, i) => log.at(i));

describe('SlidingLog', () => {
  it('grows past its initial buffer and keeps order across wrap-around', () => {
    const log = new SlidingLog(100);
    for (let t = 1; t <= 6; t++) log.push(t);
    log.trim(4);
    for (let t = 7; t <= 30; t++) log.push(t);
    expect(contents(log)).toEqual(Array.from({ length: 26 }, (_, i) => i + 5));
    expect(log.firstAfter(10)).toBe(6);
    expect(log.firstAfter(0)).toBe(0);
    expect(log.firstAfter(30)).toBe(26);
  });

  it('clamps a timestamp older than the newest entry so the log stays sorted', () => {
    const log = new SlidingLog(10);
    log.push(100);
    log.push(90);
    expect(contents(log)).toEqual([100, 100]);
  });

  it('never holds more than its maximum capacity', () => {
    const log = new SlidingLog(4);
    for (let t = 1; t <= 10; t++) log.push(t);
    expect(contents(log)).toEqual([7, 8, 9, 10]);
  });
});
