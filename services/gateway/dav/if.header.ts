import { DavError } from './dav.errors';

/** One condition of an If header list (RFC 4918 10.4): a state token or an entity tag, maybe negated. */
export interface IfCondition {
  not: boolean;
  token?: string;
  etag?: string;
}

/** A list of conditions, all of which must hold; `resource` is its tag (absent: the request target). */
export interface IfList {
  resource?: string;
  conditions: IfCondition[];
}

/**
 * Parses an If header: `(<token> ["etag"]) (Not <token>)` or tagged `<uri> (...)`. Anything else
 * is a 400, as RFC 4918 10.4 asks of a header that cannot be parsed.
 */
export function parseIfHeader(header: string | undefined): IfList[] | undefined {
  if (header === undefined) return undefined;
  const lists: IfList[] = [];
  let resource: string | undefined;
  let i = 0;
  const bad = () => new DavError(400, 'the If header cannot be parsed');
  const skip = () => {
    while (i < header.length && /\s/.test(header[i]!)) i++;
  };
  const until = (end: string): string => {
    const close = header.indexOf(end, i + 1);
    if (close < 0) throw bad();
    const value = header.slice(i + 1, close);
    i = close + 1;
    return value;
  };
  skip();
  while (i < header.length) {
    if (header[i] === '<') {
      resource = until('>');
    } else if (header[i] === '(') {
      i++;
      const conditions: IfCondition[] = [];
      for (;;) {
        skip();
        if (header[i] === ')') {
          i++;
          break;
        }
        let not = false;
        if (header.slice(i, i + 3).toLowerCase() === 'not') {
          not = true;
          i += 3;
          skip();
        }
        if (header[i] === '<') conditions.push({ not, token: until('>') });
        else if (header[i] === '[') conditions.push({ not, etag: until(']') });
        else throw bad();
      }
      if (conditions.length === 0) throw bad();
      lists.push({ resource, conditions });
    } else {
      throw bad();
    }
    skip();
  }
  if (lists.length === 0) throw bad();
  return lists;
}

/** The state tokens the header submits (not negated): the lock tokens the client holds. */
export function submittedTokens(lists: IfList[] | undefined): Set<string> {
  const tokens = new Set<string>();
  for (const list of lists ?? []) for (const c of list.conditions) if (c.token && !c.not) tokens.add(c.token);
  return tokens;
}

/** Compares entity tags as RFC 9110 weak comparison does (If lists compare that way in practice). */
export const sameEtag = (a: string, b: string): boolean => a.replace(/^W\//, '') === b.replace(/^W\//, '');
