/**
 * An lru-cache bound of `entries` entries that grows as the cache fills. A cache bounded by `max`
 * has its arrays allocated whole when it is made (for 50,000 entries about 2 MB and 10 ms), at
 * every start and in every test context, however few entries it ever holds; counted as entries of
 * size one under `maxSize`, it holds the same number and allocates as it goes.
 */
export function growingBound(entries: number): { maxSize: number; sizeCalculation: () => number } {
  return { maxSize: entries, sizeCalculation: () => 1 };
}
