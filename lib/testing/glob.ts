/**
 * A Redis glob-style pattern (SCAN's MATCH, `stringmatchlen`) as a RegExp: `*` any run, `?` one character,
 * `[abc]`, `[^a]` and `[a-z]` classes, `\x` the character x itself.
 */
export function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '\\' && i + 1 < pattern.length) source += escape(pattern[++i]);
    else if (c === '[') {
      const end = classEnd(pattern, i + 1);
      if (end === -1) {
        source += escape(c);
        continue;
      }
      source += classSource(pattern.slice(i + 1, end));
      i = end;
    } else source += escape(c);
  }
  return new RegExp(`^${source}$`);
}

/** Where the class opened before `from` closes (a `\]` inside does not close it), or −1. */
function classEnd(pattern: string, from: number): number {
  for (let i = from; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']') return i;
  }
  return -1;
}

/** The RegExp of a class body: `^` negates, `a-z` is a range, `\x` is x. */
function classSource(body: string): string {
  let negated = false;
  let i = 0;
  if (body[0] === '^') {
    negated = true;
    i = 1;
  }
  let out = '';
  for (; i < body.length; i++) {
    const c = body[i] === '\\' && i + 1 < body.length ? body[++i] : body[i];
    if (body[i + 1] === '-' && i + 2 < body.length) {
      const to = body[i + 2] === '\\' && i + 3 < body.length ? body[i + 3] : body[i + 2];
      const [low, high] = c <= to ? [c, to] : [to, c];
      out += `${escapeInClass(low)}-${escapeInClass(high)}`;
      i += body[i + 2] === '\\' ? 3 : 2;
    } else out += escapeInClass(c);
  }
  if (out === '') return negated ? '[\\s\\S]' : '(?!)';
  return `[${negated ? '^' : ''}${out}]`;
}

function escape(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function escapeInClass(c: string): string {
  return c.replace(/[\]\\^-]/g, '\\$&');
}
