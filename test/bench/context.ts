import type { HttpClient } from './http.client';
import type { BenchStack } from './stack';

/** Sizes of one run; `--quick` shrinks every scenario. */
export interface Profile {
  name: 'full' | 'quick';
  sync: { devices: number[]; batchSizes: number[]; durationMs: number };
  /** Worker processes of each run of the scaling scenario, devices sending at once, batches each keeps in flight. */
  syncScale: { workers: number[]; devices: number; inFlight: number; batchSizes: number[]; durationMs: number };
  reads: { sizes: number[]; durationS: number; connections: number; directReps: number };
  transfer: { sizes: Array<{ label: string; bytes: number; reps: number }> };
  login: { durationMs: number; burst: number };
  snapshot: { changed: number; reps: number };
  changes: { changes: number; held: number; users: number; rounds: number };
  /** Noisy neighbour: each phase's length, Alice's devices and batch size, her lock-taking write loops and her loops of deletes of missing ids. */
  noisy: { durationMs: number; aliceDevices: number; batchOps: number; writeLoops: number; missLoops: number };
  /** `--only=search-1m`: files of the one big user (and as many again of four others), sequential requests per term. */
  searchBig: { files: number; reps: number };
}

export const PROFILES: Record<Profile['name'], Profile> = {
  full: {
    name: 'full',
    sync: { devices: [1, 16, 64], batchSizes: [1, 100, 1000], durationMs: 3000 },
    syncScale: { workers: [1, 2, 4], devices: 64, inFlight: 2, batchSizes: [1, 100], durationMs: 4000 },
    reads: { sizes: [1_000, 10_000, 100_000], durationS: 4, connections: 32, directReps: 20 },
    transfer: {
      sizes: [
        { label: '1 MiB', bytes: 1024 * 1024, reps: 30 },
        { label: '100 MiB', bytes: 100 * 1024 * 1024, reps: 3 },
      ],
    },
    login: { durationMs: 5000, burst: 100 },
    snapshot: { changed: 10_000, reps: 20 },
    changes: { changes: 10_000, held: 1000, users: 10, rounds: 20 },
    noisy: { durationMs: 8000, aliceDevices: 4, batchOps: 1000, writeLoops: 8, missLoops: 22 },
    searchBig: { files: 1_000_000, reps: 30 },
  },
  quick: {
    name: 'quick',
    sync: { devices: [1, 16], batchSizes: [1, 100], durationMs: 1000 },
    syncScale: { workers: [1, 2, 4], devices: 64, inFlight: 2, batchSizes: [1], durationMs: 1500 },
    reads: { sizes: [1_000, 10_000], durationS: 1, connections: 32, directReps: 5 },
    transfer: {
      sizes: [
        { label: '1 MiB', bytes: 1024 * 1024, reps: 10 },
        { label: '10 MiB', bytes: 10 * 1024 * 1024, reps: 2 },
      ],
    },
    login: { durationMs: 1500, burst: 30 },
    snapshot: { changed: 2_000, reps: 5 },
    changes: { changes: 2_000, held: 200, users: 4, rounds: 8 },
    noisy: { durationMs: 3000, aliceDevices: 4, batchOps: 1000, writeLoops: 8, missLoops: 22 },
    searchBig: { files: 100_000, reps: 10 },
  },
};

export interface BenchContext {
  stack: BenchStack;
  client: HttpClient;
  adminToken: string;
  profile: Profile;
  log: (line: string) => void;
  /** `--syncthing-cases=small,big,edit`: the Syncthing cases to run (all when absent; edit needs big). */
  syncthingCases?: string[];
}
