import type { Readable } from 'node:stream';
import { SaxesParser } from 'saxes';
import { fragment } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces';
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

/** A builder of one element of a response; serialised on its own, so a multistatus can be streamed. */
export function davElement(local: string): XMLBuilder {
  return fragment().ele(DAV_NS, `D:${local}`);
}

/** Appends `<D:local>` under `parent` and returns it. */
export const dav = (parent: XMLBuilder, local: string, text?: string): XMLBuilder => {
  const el = parent.ele(DAV_NS, `D:${local}`);
  if (text !== undefined) el.txt(text);
  return el;
};

/**
 * Appends an element named by namespace and local name (a requested or dead property). Elements
 * outside DAV: take a default namespace declaration, so no prefix of ours can clash with the client's.
 */
export function named(parent: XMLBuilder, ns: string, local: string): XMLBuilder {
  if (ns === DAV_NS) return parent.ele(DAV_NS, `D:${local}`);
  if (ns === FS_NS) return parent.ele(FS_NS, `fs:${local}`);
  return parent.ele(ns === '' ? null : ns, local);
}

/** Appends a parsed element (a dead property's value, a lock owner) as it was received. */
export function appendElement(parent: XMLBuilder, el: XmlElement): void {
  const out = named(parent, el.ns, el.local);
  for (const a of el.attrs) {
    if (a.ns) out.att(a.ns, `${a.prefix || 'a'}:${a.local}`, a.value);
    else out.att(a.local, a.value);
  }
  for (const c of el.children) {
    if (typeof c === 'string') out.txt(c);
    else appendElement(out, c);
  }
}

export const serialize = (b: XMLBuilder): string => b.end({ headless: true });
