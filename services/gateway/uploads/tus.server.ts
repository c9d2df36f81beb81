import type http from 'node:http';
import { ERRORS, Metadata, Server, type Locker, type Upload } from '@tus/server';
import type { Principal } from '../auth/principal.service';
import { isAppError, tooLarge } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import type { Logger } from '../../../shared/logger';
import type { ResumableDataStore } from '../../../shared/storage/content.store';
import { toAppError } from '../http/errors.middleware';
import { toFileView } from '../files/files.presenter';
import { echoedMetadata } from './upload.metadata';
import type { UploadsService } from './uploads.service';

/**
 * HEAD echoes the upload's metadata (tus requires it), but only the documented keys as the client
 * sent them: never the keys the gateway keeps beside them (owner, conditions).
 */
function echoClientMetadataOnly(res: http.ServerResponse, metadata: Upload['metadata']): void {
  const echoed = Metadata.stringify(echoedMetadata(metadata));
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name, value) => {
    if (name.toLowerCase() !== 'upload-metadata') return setHeader(name, value);
    return echoed === '' ? res : setHeader(name, echoed);
  };
}

export const UPLOADS_PATH = '/v1/uploads';

/** The API's error code for a status the tus library answers with on its own. */
const CODE_OF_STATUS: Record<number, string> = {
  400: 'INVALID_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'INVALID_REQUEST',
  404: 'NOT_FOUND',
  409: 'INVALID_REQUEST',
  410: 'NOT_FOUND',
  412: 'PRECONDITION_FAILED',
  413: 'FILE_TOO_LARGE',
  415: 'INVALID_REQUEST',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

/** Marks a body already in the API's error shape, so `write` leaves it alone. */
const JSON_ERROR = /^\{"error":\{"code":/;

function errorBody(status: number, text: string, maxUploadBytes: number): string {
  // Over MAX_UPLOAD_BYTES: the wording of the other upload paths, with the limit.
  if (text === ERRORS.ERR_MAX_SIZE_EXCEEDED.body) return JSON.stringify({ error: tooLarge(maxUploadBytes).toBody() });
  const code = CODE_OF_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_REQUEST');
  const message = status >= 500 ? 'internal error' : text.trim().replace(/\s+/g, ' ') || 'request refused';
  return JSON.stringify({ error: { code, message } });
}

/**
 * @tus/server with every error response in the API's error shape: the library answers some requests
 * itself (a missing Tus-Resumable header, an offset conflict, an unknown upload) in plain text, and
 * they all leave through `write`.
 */
class ContractServer extends Server {
  constructor(
    options: ConstructorParameters<typeof Server>[0],
    private readonly maxUploadBytes: number,
  ) {
    super(options);
  }

  override write(...[context, req, res, status, body = '', headers = {}]: Parameters<Server['write']>): ReturnType<Server['write']> {
    if (status >= 400) {
      if (!JSON_ERROR.test(body)) body = errorBody(status, body, this.maxUploadBytes);
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
    }
    return super.write(context, req, res, status, body, headers);
  }
}

/** The authenticated caller, set by requireUser before the request reaches tus. */
function principal(req: http.IncomingMessage): Principal {
  const p = (req as unknown as { principal?: Principal }).principal;
  if (!p) throw ERRORS.FILE_NOT_FOUND;
  return p;
}

export interface TusServerOptions {
  store: ResumableDataStore;
  locker: Locker;
  uploads: UploadsService;
  maxUploadBytes: number;
  logger: Logger;
}

export function buildTusServer({ store, locker, uploads, maxUploadBytes, logger }: TusServerOptions): Server {
  return new ContractServer({
    path: UPLOADS_PATH,
    datastore: store,
    locker,
    maxSize: maxUploadBytes,
    // Relative, so the upload URL is right behind any proxy or load balancer without trusting its headers.
    relativeLocation: true,
    // Ids are ours, and nothing that is not one of them reaches the store (no path from client input).
    namingFunction: () => newId(),
    getFileIdFromRequest: (_req, lastPath) => (lastPath !== undefined && isId(lastPath) ? lastPath : undefined),
    // Completion moves the bytes away; a DELETE after it finds nothing (404), never a finished upload.
    disableTerminationForFinishedUploads: true,

    onUploadCreate: async (req, res, upload) => {
      const header = (name: string) => {
        const v = req.headers[name];
        return typeof v === 'string' ? v : undefined;
      };
      const conditions = { ifMatch: header('if-match'), ifNoneMatch: header('if-none-match') };
      for (const key of Object.keys(conditions) as (keyof typeof conditions)[]) if (conditions[key] === undefined) delete conditions[key];
      const metadata = await uploads.admit(principal(req), upload, conditions);
      return { res, metadata };
    },

    onIncomingRequest: async (req, res, id) => {
      if (req.method === 'POST') return;
      const upload = await uploads.requireOwn(principal(req).userId, id);
      if (req.method !== 'HEAD') return;
      if (upload.creation_date && store.getExpiration() > 0) {
        res.setHeader('Upload-Expires', new Date(Date.parse(upload.creation_date) + store.getExpiration()).toUTCString());
      }
      echoClientMetadataOnly(res, upload.metadata);
    },

    onUploadFinish: async (req, res, upload: Upload) => {
      // The library let go of the upload's lock before calling this; hold it again, so a DELETE or a
      // retried PATCH of the same upload cannot run while its bytes are being moved.
      const lock = locker.newLock(upload.id);
      await lock.lock(new AbortController().signal, () => undefined);
      try {
        await store.getUpload(upload.id);
        const record = await uploads.complete(upload);
        if (req.method === 'POST') res.once('close', store.holdCompleted(upload));
        return {
          res,
          // The PATCH that brings the last byte answers 200. An upload completed by its creation (empty,
          // or creation-with-upload) answers 201 with its Location, which clients such as tus-js-client read.
          status_code: req.method === 'POST' ? 201 : 200,
          headers: { 'Content-Type': 'application/json; charset=utf-8' },
          body: JSON.stringify(toFileView(record)),
        };
      } finally {
        await lock.unlock();
      }
    },

    onResponseError: (req, res, err) => {
      if (!isAppError(err) && 'status_code' in err && typeof err.status_code === 'number') return undefined;
      const appError = toAppError(err);
      // As errors.middleware.ts: a 503 the service chose (Redis away) is a warning, anything else unplanned an error.
      if (isAppError(err) && err.code === 'SERVICE_UNAVAILABLE') {
        logger.warn({ code: err.code, reason: err.message, method: req.method, url: req.url }, 'upload request shed');
      } else if (appError.code === 'INTERNAL' || appError.code === 'SERVICE_UNAVAILABLE') {
        logger.error({ err, method: req.method, url: req.url }, 'upload request failed');
      }
      if (appError.retryAfter !== undefined) res.setHeader('Retry-After', String(appError.retryAfter));
      return { status_code: appError.status, body: JSON.stringify({ error: appError.toBody() }) };
    },
  }, maxUploadBytes);
}
