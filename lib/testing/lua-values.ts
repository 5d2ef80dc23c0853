/** How the scripts read and write numbers in Redis strings. */

/** Redis' `tonumber` on a stored string, as the scripts use it (undefined: missing or not a number). */
export function luaNumber(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const number = Number(value);
  return Number.isFinite(number) ? number : undefined;
}

/** `string.format('%.0f', x)`. */
export function formatInteger(value: number): string {
  return Math.round(value).toFixed(0);
}
