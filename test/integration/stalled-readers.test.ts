import { readdirSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/*
 * A reader that stops reading a response must not hold it for ever: once the socket's buffers are
 * full and no byte has left for RESPONSE_STALL_MS, the gateway closes the connection, and the file
 * behind the download is closed with it. A held change-feed request, which has nothing to send, is
 * not a stalled reader.
 */
const STALL_MS = 1500;
const SIZE = 32 * 1024 * 1024;

let env: TestEnv;
let gateway: RunningGateway;
let api: Api;
let fileId: string;

beforeAll(async () => {
  env = await createTestEnv({ RESPONSE_STALL_MS: String(STALL_MS) });
  gateway = await startGateway(env);
  const admin = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
  api = admin.api;
  const uploaded = await api.upload({}, { name: 'big.bin', content: Buffer.alloc(SIZE, 7) });
  expect(uploaded.status).toBe(201);
  fileId = uploaded.body.id;
});

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

/**
 * Opens a raw connection, sends one request and reads `take` bytes, then stops reading. `resume()`
 * reads the rest and resolves with the bytes received in all once the connection has closed.
 */
function stalledRequest(path: string, take: number): Promise<{ socket: net.Socket; resume(): Promise<number> }> {
  const { port } = new URL(gateway.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: Number(port) });
    let received = 0;
    const closed = new Promise<number>((done) => socket.once('close', () => done(received)));
    let paused!: () => void;
    let stopped = false;
    const reachedTake = new Promise<void>((done) => (paused = done));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received >= take && !stopped) {
        stopped = true;
        socket.pause();
        paused();
      }
    });
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => undefined);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${api.token}\r\n\r\n`);
      void reachedTake.then(() =>
        resolve({
          socket,
          resume: () => {
            socket.resume();
            return closed;
          },
        }),
      );
    });
    socket.once('error', reject);
  });
}

/** Descriptors of this process that point at the upload directory (the gateway runs in it). */
function openContentFiles(): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(env.uploadDir)) count += 1;
    } catch {
      // The descriptor closed while being listed.
    }
  }
  return count;
}

test('a download whose reader stops reading is closed after the stall time, and its file with it', async () => {
  const { socket, resume } = await stalledRequest(`/v1/files/${fileId}/content`, 64 * 1024);
  try {
    expect(openContentFiles()).toBe(1);
    // The reader holds the connection open and reads nothing; once the gateway has given up on it,
    // the file is closed, and what the reader then finds is a response cut short.
    for (let i = 0; i < 100 && openContentFiles() > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(openContentFiles()).toBe(0);
    expect(await resume()).toBeLessThan(SIZE);
  } finally {
    socket.destroy();
  }
});

test('a reader that keeps reading slowly is not cut', async () => {
  const res = await fetch(`${gateway.baseUrl}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${api.token}` } });
  const reader = res.body!.getReader();
  let total = 0;
  let pauses = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    // Reads spaced below the stall time: progress keeps the connection.
    if (pauses < 3 && total > (pauses + 1) * 4 * 1024 * 1024) {
      pauses += 1;
      await new Promise((r) => setTimeout(r, STALL_MS / 2));
    }
  }
  expect(total).toBe(SIZE);
});

test('a held change-feed request with nothing to send is not taken for a stalled reader', async () => {
  const first = await api.get('/v1/sync/changes');
  expect(first.status).toBe(200);
  const cursor = encodeURIComponent(first.body.cursor);
  // Held for twice the stall time with nothing to send, it ends as a long poll does: empty, not cut.
  const held = await api.get(`/v1/sync/changes?cursor=${cursor}&wait=${Math.ceil((STALL_MS * 2) / 1000)}`);
  expect(held.status).toBe(200);
  expect(held.body.items).toEqual([]);
});
