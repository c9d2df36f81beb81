import net from 'node:net';
import type { S3Client } from '@aws-sdk/client-s3';
import type { S3Config } from '../../shared/config';
import { S3SocketReads } from '../../shared/storage/s3/s3.socket-reads';

/**
 * A scripted HTTP/1.1 server standing in for an object store, with S3SocketReads pointed at it: for
 * the connection handling an object store's answers can provoke (kept connections closed under a
 * request, a cut body, a stall, an answer that is not the bytes asked for).
 */

/** Stands in for the S3 client: S3SocketReads only takes its credential provider. */
export const client = { config: { credentials: async () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }) } } as unknown as S3Client;

export interface Exchange {
  /** The request head as received. */
  head: string;
  socket: net.Socket;
  /** The connection's number, from 1, in the order the server accepted them. */
  connection: number;
}

/** A server that hands each request head to `answer`, which writes on the socket what it wants. */
export async function scriptedServer(answer: (ex: Exchange) => void, readTimeoutMs?: number) {
  let connections = 0;
  const requests: Exchange[] = [];
  const open = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    const connection = ++connections;
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      let end: number;
      while ((end = buffered.indexOf('\r\n\r\n')) >= 0) {
        const ex = { head: buffered.slice(0, end), socket, connection };
        buffered = buffered.slice(end + 4);
        requests.push(ex);
        answer(ex);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const config: S3Config = { bucket: 'b', prefix: '', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', forcePathStyle: true, credentials: undefined };
  const reads = S3SocketReads.for(client, config, readTimeoutMs)!;
  return {
    reads,
    requests,
    connections: () => connections,
    close: async () => {
      reads.close();
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export const ok = (body: Buffer, status = 200, extra = '') =>
  Buffer.concat([Buffer.from(`HTTP/1.1 ${status} OK\r\nContent-Length: ${body.length}\r\n${extra}\r\n`), body]);

