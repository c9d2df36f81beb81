export { FilesyncClient } from './client';
export type { ClientOptions, ListFilesQuery, UploadFileInput, ReplaceContentInput, ChangesQuery } from './client';
export { ApiError, NetworkError, AbortedError, isApiError } from './errors';
export { DEFAULT_RETRY, type RetryPolicy } from './http';
export type { ResumableUploadOptions } from './tus';
export type * from '../../../shared/protocol';
export { ERROR_CODES, OP_TYPES, nameProblem } from '../../../shared/protocol';
export { planDelta, deltaBody, fetchChunkList, uploadDelta, fetchRange, type DeltaStep } from './delta';
export { ContentChunker, chunksOf, CHUNKING, type ChunkList, type ContentChunk } from '../../../shared/protocol/chunking';
