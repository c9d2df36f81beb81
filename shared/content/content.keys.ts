import { randomBytes } from 'node:crypto';

/**
 * Content keys: `<deviceId>/<resourceId>[.<ext>]` for a file's first content, under the folder of
 * the device that wrote it (docs/ARCHITECTURE.md, "File content"; on S3 under the store's
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
