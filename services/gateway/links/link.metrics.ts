import { Counter, type Registry } from 'prom-client';

export type LinkTransferKind = 'content' | 'archive' | 'upload';

/** What share links carry, without any user, link or token label (those would name people and grow without bound). */
export interface LinkMetrics {
  /** A download counted (a response from byte 0) or an archive started: `content` or `archive`. */
  download(kind: 'content' | 'archive'): void;
  uploaded(bytes: number): void;
}

export function linkMetrics(registry: Registry): LinkMetrics {
  const downloads = new Counter({
    name: 'filesync_link_downloads_total',
    help: 'Downloads through share links (a content response from byte 0, or a ZIP of a folder)',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const uploads = new Counter({ name: 'filesync_link_uploads_total', help: 'Files received through upload links', registers: [registry] });
  const uploadBytes = new Counter({ name: 'filesync_link_upload_bytes_total', help: 'Bytes of the files received through upload links', registers: [registry] });
  return {
    download: (kind) => downloads.inc({ kind }),
    uploaded: (bytes) => {
      uploads.inc();
      uploadBytes.inc(bytes);
    },
  };
}
