import { preconditionFailed } from '../../../shared/errors';

/** The conditional headers of a content write, as the client sent them. */
export interface ContentConditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

interface EntityTag {
  weak: boolean;
  opaque: string;
}

/**
 * An If-Match / If-None-Match list (RFC 9110 section 8.8.3): `*` or entity tags separated by commas.
 * A bare 64-hex value is read as that strong tag, since clients often drop the quotes of a hash.
 * Anything unreadable is kept as a tag that matches nothing.
 */
function entityTags(header: string): EntityTag[] | '*' {
  if (header.trim() === '*') return '*';
  const tags: EntityTag[] = [];
  const pattern = /\s*(W\/)?"([^"]*)"\s*(?:,|$)|\s*([0-9a-fA-F]{64})\s*(?:,|$)/y;
  let match: RegExpExecArray | null;
  while (pattern.lastIndex < header.length && (match = pattern.exec(header)) !== null) {
    if (match[3] !== undefined) tags.push({ weak: false, opaque: match[3].toLowerCase() });
    else tags.push({ weak: match[1] !== undefined, opaque: match[2]! });
  }
  return tags;
}

/** What a content precondition is checked against: the file's rev and its content's SHA-256 (null: none yet). */
export interface ContentState {
  rev: number;
  contentSha256: string | null;
}

/**
 * Throws PRECONDITION_FAILED unless the conditions hold for a file in state `file`. The ETag of
 * content is its quoted SHA-256, so "the file's content is that one" is a strong comparison of the
 * hash. The error's details give the current rev and SHA-256, so a client can resolve the conflict
 * without asking again.
 */
export function checkContentConditions(file: ContentState, conditions: ContentConditions): void {
  const { ifMatch, ifNoneMatch } = conditions;
  const current = file.contentSha256;
  const details = { rev: file.rev, sha256: current };
  if (ifMatch !== undefined) {
    const tags = entityTags(ifMatch);
    const holds = current !== null && (tags === '*' || tags.some((t) => !t.weak && t.opaque === current));
    if (!holds) {
      throw preconditionFailed(current === null ? 'If-Match: the file has no content yet' : 'If-Match: the file\'s content has changed', details);
    }
  }
  if (ifNoneMatch !== undefined && current !== null) {
    const tags = entityTags(ifNoneMatch);
    // If-None-Match uses the weak comparison.
    if (tags === '*' || tags.some((t) => t.opaque === current)) {
      throw preconditionFailed(tags === '*' ? 'If-None-Match: *: the file already has content' : 'If-None-Match: the file already has that content', details);
    }
  }
}
