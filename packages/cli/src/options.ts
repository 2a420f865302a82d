/**
 * @module cli/options
 * Parsers of command-line option values shared by several commands (commander calls them with
 * the option's text; a bad value is a usage error, exit status 2, naming the option).
 */
import { usageError } from "./output.ts";

/** Collects a repeatable option's values. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** A positive integer option, or a usage error naming it. */
export function positiveInt(name: string, value: string, max = 64): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw usageError(`${name} must be an integer 1..${max}`);
  return n;
}
