// The app speaks English: one fan, two fans (and zero fans).
const rules = new Intl.PluralRules("en");

/** `one` or `other` (by default `one` + "s"), as `count` needs: plural(1, "fan") is "fan". */
export function plural(count: number, one: string, other = `${one}s`): string {
  return rules.select(count) === "one" ? one : other;
}

/** A count and its noun: "1 fan", "3,538 fans". */
export function countOf(count: number, one: string, other?: string): string {
  return `${count.toLocaleString()} ${plural(count, one, other)}`;
}
