/** The wire types of share links (docs/LINKS.md): the owner's side under /v1/links, the public side under /v1/public/:token. */

export type LinkAccess = 'read' | 'upload';

export interface Link {
  id: string;
  /** At least 128 random bits, base64url. */
  token: string;
  /** `<PUBLIC_URL>/s/<token>`. */
  url: string;
  resourceId: string;
  resourceType: 'file' | 'folder';
  access: LinkAccess;
  hasPassword: boolean;
  expiresAt: string | null;
  maxDownloads: number | null;
  downloads: number;
  /** The link's own device: changes made through the link carry it in the change feed. */
  deviceId: string;
  createdAt: string;
}

export interface CreateLinkRequest {
  resourceId: string;
  access?: LinkAccess;
  password?: string;
  expiresAt?: string;
  maxDownloads?: number;
}

export interface UpdateLinkRequest {
  password?: string | null;
  expiresAt?: string | null;
  maxDownloads?: number | null;
}

/** `GET /public/:token`: nothing about the owner. */
export interface PublicLink {
  access: LinkAccess;
  hasPassword: boolean;
  expiresAt: string | null;
  resource: { type: 'file' | 'folder'; name: string; size?: number };
}

export interface PublicItem {
  type: 'file' | 'folder';
  id: string;
  name: string;
  size?: number;
  mimeType?: string;
  updatedAt: string;
}

export interface UnlockResponse {
  access: string;
  expiresAt: string;
}

export interface PublicUploadResponse {
  name: string;
  size: number;
}
