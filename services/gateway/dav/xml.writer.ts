import { DAV_NS, escapeAttribute, escapeText, FS_NS, XML_NS, type XmlElement, type XmlNode } from './dav.xml';

/** The prefix an element of these namespaces is written with; others are written unprefixed. */
const PREFIXES: Record<string, string> = { [DAV_NS]: 'D', [FS_NS]: 'fs', [XML_NS]: 'xml' };

/**
 * The start tag of an element as a response writes it, where `D:` and `fs:` are declared on the
 * root and `defaultNs` is the default namespace in scope: DAV:, urn:filesync and the XML namespace
 * take their prefix; any other namespace is declared as the default one on the element, so no
 * prefix of ours can clash with the client's. `inner` is the default namespace of its content.
 */
export function startTag(ns: string, local: string, defaultNs: string, attrs: string[] = []): { name: string; open: string; inner: string } {
  const prefix = PREFIXES[ns];
  const name = prefix ? `${prefix}:${local}` : local;
  const declared = prefix || ns === defaultNs ? [] : [`xmlns="${escapeAttribute(ns)}"`];
  const all = [...declared, ...attrs];
  return { name, open: `<${name}${all.length ? ` ${all.join(' ')}` : ''}`, inner: prefix ? defaultNs : ns };
}

function attributesOf(el: XmlElement): string[] {
  const out: string[] = [];
  el.attrs.forEach((a, i) => {
    if (!a.ns) out.push(`${a.local}="${escapeAttribute(a.value)}"`);
    else if (a.ns === XML_NS) out.push(`xml:${a.local}="${escapeAttribute(a.value)}"`);
    else out.push(`xmlns:a${i}="${escapeAttribute(a.ns)}"`, `a${i}:${a.local}="${escapeAttribute(a.value)}"`);
  });
  return out;
}

interface Frame {
  nodes: XmlNode[];
  next: number;
  defaultNs: string;
  close: string;
}

/**
 * Writes nodes received in a request (a dead property, a lock owner) back as XML, namespaces kept.
 * Iterative, so a stored value of any depth is written without growing the call stack.
 */
function writeNodes(nodes: XmlNode[], defaultNs: string): string {
  const out: string[] = [];
  const stack: Frame[] = [{ nodes, next: 0, defaultNs, close: '' }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next >= frame.nodes.length) {
      out.push(frame.close);
      stack.pop();
      continue;
    }
    const node = frame.nodes[frame.next++]!;
    if (typeof node === 'string') {
      out.push(escapeText(node));
      continue;
    }
    const tag = startTag(node.ns, node.local, frame.defaultNs, attributesOf(node));
    if (node.children.length === 0) {
      out.push(`${tag.open}/>`);
      continue;
    }
    out.push(`${tag.open}>`);
    stack.push({ nodes: node.children, next: 0, defaultNs: tag.inner, close: `</${tag.name}>` });
  }
  return out.join('');
}

/** An element as XML, placed where `defaultNs` is the default namespace. */
export const writeElement = (el: XmlElement, defaultNs = ''): string => writeNodes([el], defaultNs);

/** The content of an element (a lock owner's), as XML. */
export const writeContent = (el: XmlElement, defaultNs = ''): string => writeNodes(el.children, defaultNs);

/** The content of a property element as stored and answered: what its size limits count, in bytes. */
export function contentBytes(el: XmlElement): number {
  return Buffer.byteLength(writeNodes(el.children, startTag(el.ns, el.local, '').inner));
}
