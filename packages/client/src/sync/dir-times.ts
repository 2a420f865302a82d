/**
 * @module client/sync/dir-times
 * The three-way comparison of directory modification times (docs/attributes.md#directory-modification-times),
 * pure. A directory's time lives in its folder entry's sealed attributes on the server; the
 * state database keeps, per directory, the time it had on disk and the time on the server after
 * the last sync.
 *
 * Rules, per directory that exists locally once the pass's files are written (L = time when
 * scanned, R = server's time, B = the base):
 * - new since the scan (created by the pass): R, or its time now when the server has none;
 * - no base (first sync of it): R, else L;
 * - only L moved from B: L; only R moved: R; both: the later of the two; neither: R, or L when
 *   the server has none.
 * That time is set on disk when the directory's time differs from it now (writing a file into
 * a directory moves its time: times are set after every file, deepest directory first), and
 * sent when the server's differs. A directory of the base that no longer exists locally and
 * still has an entry on the server was removed here: its entry goes (a rename leaves no stray
 * directory behind).
 */

/** What the state database recorded for one directory after the last sync, Unix ms. */
export interface DirTimeBase {
  /** Its time on disk. */
  local: number;
  /** Its time on the server. */
  remote: number;
}

/** Inputs of `planDirTimes` (times in Unix ms, by directory path). */
export interface DirTimeInput {
  /** Directories and their times when the pass scanned them. */
  scanned: ReadonlyMap<string, number>;
  base: ReadonlyMap<string, DirTimeBase>;
  /** Directories whose folder entry has readable attributes, with their time. */
  remote: ReadonlyMap<string, number>;
  /** Every registered folder entry. */
  entries: ReadonlySet<string>;
  /** Directories that exist locally now, with their time now. */
  present: ReadonlyMap<string, number>;
}

/** What to do with one directory's time. */
export interface DirTimeStep {
  dir: string;
  /** The time both sides end with, Unix ms. */
  mtimeMs: number;
  /** Set it on disk. */
  apply: boolean;
  /** Send it to the server (register the entry with it). */
  send: boolean;
}

/** Times closer than this (ms) are the same time (file systems round below a millisecond). */
const SAME_MS = 1;

function moved(a: number, b: number): boolean {
  return Math.abs(a - b) >= SAME_MS;
}

/**
 * The steps for every present directory, deepest first (then by path), and the entries of
 * directories removed here. Pure; see the module comment for the rules.
 */
export function planDirTimes(input: DirTimeInput): { steps: DirTimeStep[]; gone: string[] } {
  const steps: DirTimeStep[] = [];
  for (const [dir, now] of input.present) {
    const l = input.scanned.get(dir);
    const r = input.remote.get(dir);
    const b = input.base.get(dir);
    let t: number;
    if (l === undefined) t = r ?? now;
    else if (!b) t = r ?? l;
    else {
      const lc = moved(l, b.local);
      const rc = r !== undefined && moved(r, b.remote);
      t = lc && rc ? Math.max(l, r) : lc ? l : rc ? (r as number) : (r ?? l);
    }
    steps.push({ dir, mtimeMs: t, apply: moved(now, t), send: r === undefined || moved(r, t) });
  }
  const depth = (p: string) => p.split("/").length;
  steps.sort((a, b) => depth(b.dir) - depth(a.dir) || (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0));
  const gone = [...input.base.keys()].filter((d) => !input.present.has(d) && input.entries.has(d)).sort();
  return { steps, gone };
}

/** True when a step changes something on either side. */
export function isDirTimeChange(s: DirTimeStep): boolean {
  return s.apply || s.send;
}
