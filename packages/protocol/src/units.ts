/**
 * @module protocol/units
 * Byte sizes as people read them, shared by every program that prints one (the `esync` client,
 * the operator commands, the recipient page) so that the same size reads the same everywhere.
 */

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/**
 * Human-readable binary size of `bytes` (a count of bytes): `0 B`, `512 B`, `1.5 MiB`, `12 GiB`;
 * `-` for a negative or non-finite input.
 */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return "-";
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  if (u === 0) return `${v} B`;
  const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${Number(v.toFixed(digits))} ${UNITS[u]}`;
}
