import { randomBytes } from 'node:crypto';

/**
 * Content keys: `<deviceId>/<resourceId>[.<ext>]` for a file's first content, under the folder of
 * the device that wrote it (API.md: the layout of UPLOAD_DIR, and of an object store under its
 * prefix). Built from ids and a normalised extension only, never from a client's text.
 */
export function contentKey(deviceId: string, resourceId: string, extension: string | null): string {
  return `${deviceId}/${resourceId}${extension ? `.${extension}` : ''}`;
}

/**
 * A new key for replaced content: `<deviceId>/<resourceId>.<random>[.<ext>]`, never the current
 * one. A reader may be streaming the current bytes, so new content never lands on them.
 */
export function replacementKey(deviceId: string, resourceId: string, extension: string | null, currentKey: string | null): string {
  for (;;) {
    const key = `${deviceId}/${resourceId}.${randomBytes(4).toString('hex')}${extension ? `.${extension}` : ''}`;
    if (key !== currentKey) return key;
  }
}
