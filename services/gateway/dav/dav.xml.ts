import { XMLBuilder } from 'fast-xml-parser';

export const DAV_NS = 'DAV:';
export const FS_NS = 'urn:filesync';
/** The namespace the `xml` prefix is bound to by definition: never declared, never a default. */
export const XML_NS = 'http://www.w3.org/XML/1998/namespace';

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
export const escapeText = (value: string): string => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
export const escapeAttribute = (value: string): string => escapeText(value).replace(/"/g, '&quot;');

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
 * An element named by namespace and local name (a requested property, a dead property's name).
 * Outside DAV: and urn:filesync it declares its namespace as the default one, so no prefix of ours
 * can clash with the client's. The XML namespace keeps its predeclared `xml` prefix: it may be
 * neither declared nor made the default.
 */
export function named(ns: string, local: string, children: XNode[] = []): XNode {
  if (ns === DAV_NS) return x(`D:${local}`, children);
  if (ns === FS_NS) return x(`fs:${local}`, children);
  if (ns === XML_NS) return x(`xml:${local}`, children);
  return x(local, children, { xmlns: ns });
}

export const serialize = (node: XNode): string => builder.build([node]) as string;

/** XML already written (xml.writer.ts), placed as it is. */
export const raw = (xml: string): XNode => ({ '#text': xml });

/**
 * Nodes serialised once, for a part of every response that never changes (supportedlock): placed as
 * text the builder does not escape again, it costs nothing per response.
 */
export const preserialized = (nodes: XNode[]): XNode => ({ '#text': builder.build(nodes) as string });
