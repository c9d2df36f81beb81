import { StringDecoder } from 'node:string_decoder';
import type { Request } from 'express';
import { SaxesParser } from 'saxes';
import { discardRest } from '../content/content.routes';
import { DavError } from './dav.errors';
import type { XmlElement } from './dav.xml';

/** Deepest element nesting a request body may have (the root is at depth 1). */
export const MAX_XML_DEPTH = 64;
/** Most elements a request body may hold. */
export const MAX_XML_ELEMENTS = 10_000;
/** Most attributes (namespace declarations included) a request body may hold. */
export const MAX_XML_ATTRIBUTES = 10_000;
/**
 * Largest XML body read: a PROPPATCH that fills a resource's 64 KiB of dead properties, however
 * escaped and with 100 names, fits several times over.
 */
export const MAX_XML_BODY = 1024 * 1024;
/** Bytes parsed between two turns of the event loop. */
const SLICE_BYTES = 16 * 1024;

/**
 * Reads and parses an XML request body as it arrives, with saxes (strict, namespace-aware): a body
 * that is not well-formed, breaks the namespace rules (an undeclared prefix, `xmlns:p=""`), is
 * nested deeper than MAX_XML_DEPTH or holds more than MAX_XML_ELEMENTS elements or
 * MAX_XML_ATTRIBUTES attributes is a 400 at the first byte that breaks the rule; the rest of the
 * body is discarded unread. Over MAX_XML_BODY: 413. A blank body: undefined.
 *
 * The parser's work is bounded per element by the depth limit (saxes resolves a prefix by walking
 * up the open elements), and the reader yields to the event loop after every 16 KiB, so no body
 * holds the gateway from its other requests for longer than the parsing of 16 KiB.
 */
export function readXml(req: Request): Promise<XmlElement | undefined> {
  const parser = new SaxesParser({ xmlns: true });
  const decoder = new StringDecoder('utf8');
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let elementCount = 0;
  let attributeCount = 0;
  let blank = true;

  parser.on('error', (err) => {
    throw new DavError(400, `the XML body is not well-formed: ${err.message}`);
  });
  parser.on('opentagstart', () => {
    if (stack.length + 1 > MAX_XML_DEPTH) throw new DavError(400, `the XML body is nested deeper than ${MAX_XML_DEPTH} elements`);
    if (++elementCount > MAX_XML_ELEMENTS) throw new DavError(400, `the XML body has more than ${MAX_XML_ELEMENTS} elements`);
  });
  parser.on('attribute', () => {
    if (++attributeCount > MAX_XML_ATTRIBUTES) throw new DavError(400, `the XML body has more than ${MAX_XML_ATTRIBUTES} attributes`);
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
  const onText = (t: string) => {
    if (stack.length > 0) stack[stack.length - 1]!.children.push(t);
  };
  parser.on('text', onText);
  parser.on('cdata', onText);

  const feed = (text: string) => {
    if (blank) {
      if (text.trim() === '') return;
      blank = false;
    }
    parser.write(text);
  };

  return new Promise((resolve, reject) => {
    let size = 0;
    let settled = false;
    const cleanup = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      if (!req.complete) discardRest(req);
      else req.resume();
      reject(err);
    };
    let busy = false;
    let ended = false;
    function onData(chunk: Buffer) {
      size += chunk.length;
      if (size > MAX_XML_BODY) return fail(new DavError(413, 'the XML body is too large'));
      // A slice at a time, letting other requests run in between, even when many chunks are buffered.
      busy = true;
      req.pause();
      const step = (offset: number) => {
        if (settled) return;
        try {
          feed(decoder.write(chunk.subarray(offset, offset + SLICE_BYTES)));
        } catch (err) {
          return fail(err);
        }
        if (offset + SLICE_BYTES < chunk.length) return void setImmediate(() => step(offset + SLICE_BYTES));
        setImmediate(() => {
          busy = false;
          if (ended) onEnd();
          else if (!settled) req.resume();
        });
      };
      step(0);
    }
    function onEnd() {
      if (settled) return;
      ended = true;
      if (busy) return;
      try {
        feed(decoder.end());
        if (blank) {
          settled = true;
          cleanup();
          resolve(undefined);
          return;
        }
        parser.close();
      } catch (err) {
        return fail(err);
      }
      if (!root) return fail(new DavError(400, 'the XML body is not well-formed: no element'));
      settled = true;
      cleanup();
      resolve(root);
    }
    function onError(err: Error) {
      fail(err);
    }
    function onAborted() {
      fail(new DavError(400, 'the request body was cut off'));
    }
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
    req.resume();
  });
}
