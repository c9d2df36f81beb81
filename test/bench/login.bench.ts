import argon2 from 'argon2';
import { ARGON2_OPTIONS } from '../../services/gateway/auth/password.hasher';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { LOGIN_CONCURRENCY, memoryOf, resetPeakMemory } from './stack';
import { figure, fmt, fmtBytes, fmtRatio, msSince, now, summarize, type ScenarioReport } from './stats';

const MiB = 1024 * 1024;

async function loops(concurrency: number, durationMs: number, call: () => Promise<void>) {
  const latencies: number[] = [];
  const start = now();
  const deadline = Date.now() + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const t = now();
        await call();
        latencies.push(msSince(t));
      }
    }),
  );
  return { perSec: latencies.length / (msSince(start) / 1000), ...summarize(latencies) };
}

export async function runLogin(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const [user] = (await provisionUsers(client, ctx.adminToken, ['login'])) as [BenchUser];
  const body = JSON.stringify({ username: user.username, password: user.password, deviceId: user.deviceId });
  const headers = { 'content-type': 'application/json' };
  const statuses = new Map<number, number>();
  const loginOnce = async () => {
    const res = await client.request('POST', '/v1/auth/login', { headers, body });
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  };

  // Steady state at the Argon2 bound: as many clients as the limiter lets verify at once.
  await loginOnce();
  const steady = await loops(LOGIN_CONCURRENCY, profile.login.durationMs, loginOnce);
  const steadyStatuses = Object.fromEntries(statuses);
  statuses.clear();

  // Ceiling: argon2.verify with the service's own parameters, same concurrency, in this process.
  const hash = await argon2.hash(user.password, ARGON2_OPTIONS);
  await argon2.verify(hash, user.password);
  const bare = await loops(LOGIN_CONCURRENCY, profile.login.durationMs, async () => {
    await argon2.verify(hash, user.password);
  });
  log(`login: ${fmt(steady.perSec)} logins/s (argon2 alone ${fmt(bare.perSec)}/s)`);

  // Burst: every login at once; the gateway's peak resident memory while it drains them.
  const pid = stack.gatewayPid;
  await new Promise((r) => setTimeout(r, 500));
  const before = await memoryOf(pid);
  const reset = await resetPeakMemory(pid);
  let sampledPeak = before.rss;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      sampledPeak = Math.max(sampledPeak, (await memoryOf(pid)).rss);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const burstLatencies: number[] = [];
  const t = now();
  await Promise.all(
    Array.from({ length: profile.login.burst }, async () => {
      const s = now();
      await loginOnce();
      burstLatencies.push(msSince(s));
    }),
  );
  const burstMs = msSince(t);
  sampling = false;
  await sampler;
  const after = await memoryOf(pid);
  const peak = Math.max(sampledPeak, reset ? after.hwm : 0);
  const burst = summarize(burstLatencies);
  const burstStatuses = Object.fromEntries(statuses);
  // What the limiter should hold memory to: the resting process plus LOGIN_CONCURRENCY Argon2 blocks of 64 MiB.
  const expectedPeak = before.rss + LOGIN_CONCURRENCY * (ARGON2_OPTIONS.memoryCost * 1024);
  const expectedBurstMs = (profile.login.burst / bare.perSec) * 1000;
  log(`login: burst of ${profile.login.burst}: ${fmt(burstMs)} ms, statuses ${JSON.stringify(burstStatuses)}, peak RSS ${fmtBytes(peak)} (rest ${fmtBytes(before.rss)})`);

  const burstCase = `burst of ${profile.login.burst} simultaneous logins`;
  return {
    name: 'login',
    title: `Login: POST /v1/auth/login (LOGIN_CONCURRENCY=${LOGIN_CONCURRENCY}, Argon2id m=64 MiB t=1 p=4)`,
    headers: ['case', 'metric', 'service', 'ceiling', 'ratio'],
    rows: [
      [`${LOGIN_CONCURRENCY} clients, ${profile.login.durationMs / 1000} s`, 'logins/s', fmt(steady.perSec), `${fmt(bare.perSec)} (argon2.verify x${LOGIN_CONCURRENCY} in process)`, fmtRatio(steady.perSec, bare.perSec, 'rate')],
      ['', 'latency p50 / p99 ms', `${fmt(steady.p50)} / ${fmt(steady.p99)}`, `${fmt(bare.p50)} / ${fmt(bare.p99)}`, fmtRatio(steady.p50, bare.p50, 'time')],
      [burstCase, 'time to answer all ms', fmt(burstMs), `${fmt(expectedBurstMs)} (${profile.login.burst} / argon2 rate)`, fmtRatio(burstMs, expectedBurstMs, 'time')],
      ['', 'latency p50 / p99 ms', `${fmt(burst.p50)} / ${fmt(burst.p99)}`, '', ''],
      ['', 'answers', Object.entries(burstStatuses).map(([s, n]) => `${n} x ${s}`).join(', '), `${profile.login.burst} x 200`, ''],
      ['', 'gateway peak RSS', fmtBytes(peak), `${fmtBytes(expectedPeak)} (rest ${fmtBytes(before.rss)} + ${LOGIN_CONCURRENCY} x 64 MiB)`, fmtRatio(peak, expectedPeak, 'size')],
    ],
    notes: [
      `Peak RSS: VmHWM of the gateway process after resetting it (/proc/<pid>/clear_refs${reset ? '' : ', not permitted here'}) and VmRSS sampled every 5 ms during the burst; the larger is shown.`,
      'The ceiling runs argon2.verify in the bench process with the service\'s own ARGON2_OPTIONS and the same concurrency, while the service is idle.',
    ],
    figures: [
      figure('login', `${LOGIN_CONCURRENCY} clients steady`, 'throughput', 'logins/s', 'rate', steady.perSec, [{ name: 'argon2.verify in process', value: bare.perSec }]),
      figure('login', `${LOGIN_CONCURRENCY} clients steady`, 'latency p50', 'ms', 'time', steady.p50, [{ name: 'argon2.verify in process', value: bare.p50 }]),
      figure('login', `${LOGIN_CONCURRENCY} clients steady`, 'latency p99', 'ms', 'time', steady.p99, [{ name: 'argon2.verify in process', value: bare.p99 }]),
      figure('login', burstCase, 'time to answer all', 'ms', 'time', burstMs, [{ name: 'burst / argon2 rate', value: expectedBurstMs }]),
      figure('login', burstCase, 'gateway peak RSS', 'bytes', 'size', peak, [{ name: `rest + ${LOGIN_CONCURRENCY} x 64 MiB`, value: expectedPeak }]),
    ],
    details: {
      steady,
      steadyStatuses,
      argon2Alone: bare,
      burst: { ...burst, wallMs: burstMs, statuses: burstStatuses },
      memory: { restRss: before.rss, restHwmBefore: before.hwm, peakRss: peak, sampledPeakRss: sampledPeak, hwmAfter: after.hwm, hwmReset: reset, expectedPeak, MiB },
    },
  };
}
