import type { Readable } from 'node:stream';
import { SaxesParser } from 'saxes';
import { XMLBuilder } from 'fast-xml-parser';
import { DavError } from './dav.errors';

export const DAV_NS = 'DAV:';
export const FS_NS = 'urn:filesync';

/** An element of a request body, namespaces resolved. */
export interface XmlElement {
  ns: string;
  local: string;
  attrs: Array<{ ns: string; local: string; prefix: string; value: string }>;
  children: XmlNode[];
}
export type XmlNode = XmlElement | string;

export const isElement = (n: XmlNode): n is XmlElement => typeof n !== 'string';
export const elements = (e: XmlElement): XmlElement[] => e.children.filter(isElement);
export const child = (e: XmlElement, ns: string, local: string): XmlElement | undefined =>
  elements(e).find((c) => c.ns === ns && c.local === local);
export const textOf = (e: XmlElement): string => e.children.map((c) => (typeof c === 'string' ? c : textOf(c))).join('');

/** Largest XML body read (a PROPPATCH of several 64 KiB properties fits). */
export const MAX_XML_BODY = 4 * 1024 * 1024;

/** Reads a request body as text, at most MAX_XML_BODY bytes (413 beyond). */
export async function readBody(req: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_XML_BODY) throw new DavError(413, 'the XML body is too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Parses an XML request body with saxes (strict, namespace-aware): a body that is not well-formed,
 * or breaks the namespace rules (an undeclared prefix, `xmlns:p=""`), is a 400. Blank: undefined.
 */
export function parseXml(text: string): XmlElement | undefined {
  if (text.trim() === '') return undefined;
  const parser = new SaxesParser({ xmlns: true });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let failure: Error | undefined;
  parser.on('error', (err) => {
    failure ??= err;
  });
  parser.on('opentag', (tag) => {
    const el: XmlElement = {
      ns: tag.uri ?? '',
      local: tag.local ?? tag.name,
      attrs: Object.values(tag.attributes)
        .filter((a) => a.uri !== 'http://www.w3.org/2000/xmlns/')
        .map((a) => ({ ns: a.uri, local: a.local, prefix: a.prefix, value: a.value })),
      children: [],
    };
    if (stack.length === 0) root = el;
    else stack[stack.length - 1]!.children.push(el);
    stack.push(el);
  });
  parser.on('closetag', () => void stack.pop());
  parser.on('text', (t) => {
    if (stack.length > 0) stack[stack.length - 1]!.children.push(t);
  });
  parser.on('cdata', (t) => {
    if (stack.length > 0) stack[stack.length - 1]!.children.push(t);
  });
  try {
    parser.write(text).close();
  } catch (err) {
    failure ??= err as Error;
  }
  if (failure || !root) throw new DavError(400, `the XML body is not well-formed: ${failure?.message ?? 'no element'}`);
  return root;
}

/**
 * An element or text of a response, in fast-xml-parser's ordered form: `{ name: children, ':@':
 * attributes }` or `{ '#text': text }`, escaped as they are made. Responses are serialised element by
 * element, so a multistatus can be streamed.
 */
export type XNode = { [name: string]: XNode[] | Record<string, string> | string };

/*
 * Text and attribute values are escaped here rather than by the builder, which would also turn the
 * quotes of every ETag into `&quot;`: valid XML, but not what clients that compare ETags as they
 * appear (and Apache's mod_dav) expect.
 */
const builder = new XMLBuilder({ preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '@_', suppressEmptyNode: true, processEntities: false });
const escapeText = (value: string): string => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttribute = (value: string): string => escapeText(value).replace(/"/g, '&quot;');

/** The namespaces of a response's root: `D:` and `fs:` are declared once, there. */
export const ROOT_NAMESPACES = { 'xmlns:D': DAV_NS, 'xmlns:fs': FS_NS };

export function x(name: string, children: XNode[] = [], attrs?: Record<string, string>): XNode {
  const node: XNode = { [name]: children };
  if (attrs) node[':@'] = Object.fromEntries(Object.entries(attrs).map(([k, v]) => [`@_${k}`, escapeAttribute(v)]));
  return node;
}

export const text = (value: string): XNode => ({ '#text': escapeText(value) });

/** `<D:local>`, with text or children. */
export const dav = (local: string, content: XNode[] | string = []): XNode => x(`D:${local}`, typeof content === 'string' ? [text(content)] : content);

/**
 * An element named by namespace and local name (a requested or dead property). Outside DAV: and
 * urn:filesync it declares its namespace as the default one, so no prefix of ours can clash with the
 * client's; `defaultNs` is the default namespace in scope where it is placed.
 */
export function named(ns: string, local: string, children: XNode[] = [], defaultNs = '', attrs: Record<string, string> = {}): XNode {
  if (ns === DAV_NS) return x(`D:${local}`, children, Object.keys(attrs).length ? attrs : undefined);
  if (ns === FS_NS) return x(`fs:${local}`, children, Object.keys(attrs).length ? attrs : undefined);
  return x(local, children, ns === defaultNs ? (Object.keys(attrs).length ? attrs : undefined) : { xmlns: ns, ...attrs });
}

const XML_NS = 'http://www.w3.org/XML/1998/namespace';

/** A parsed element (a dead property's value, a lock owner) as it was received, namespaces kept. */
export function fromElement(el: XmlElement, defaultNs = ''): XNode {
  const attrs: Record<string, string> = {};
  el.attrs.forEach((a, i) => {
    if (!a.ns) attrs[a.local] = a.value;
    else if (a.ns === XML_NS) attrs[`xml:${a.local}`] = a.value;
    else {
      attrs[`xmlns:a${i}`] = a.ns;
      attrs[`a${i}:${a.local}`] = a.value;
    }
  });
  const inner = el.ns === DAV_NS || el.ns === FS_NS ? defaultNs : el.ns;
  return named(el.ns, el.local, childrenOf(el, inner), defaultNs, attrs);
}

/** The children of a parsed element, as nodes. */
export const childrenOf = (el: XmlElement, defaultNs = ''): XNode[] => el.children.map((c) => (typeof c === 'string' ? text(c) : fromElement(c, defaultNs)));

export const serialize = (node: XNode): string => builder.build([node]) as string;

/**
 * Nodes serialised once, for a part of every response that never changes (supportedlock): placed as
 * text the builder does not escape again, it costs nothing per response.
 */
export const preserialized = (nodes: XNode[]): XNode => ({ '#text': builder.build(nodes) as string });
