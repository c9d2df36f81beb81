import { AppError } from '../../../shared/errors';

/**
 * Caps concurrent expensive work (Argon2 runs 64 MiB each) and bounds how long excess callers wait.
 * A caller that cannot start within `maxWaitMs` gets 503 with Retry-After instead of piling up.
 */
export class ConcurrencyLimiter {
  private running = 0;
  private readonly waiting: Array<{ start: () => void; timer: NodeJS.Timeout }> = [];

  constructor(
    private readonly max: number,
    private readonly maxWaitMs: number,
    private readonly maxQueue = 1000,
  ) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.running < this.max) {
      this.running++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.maxQueue) return Promise.reject(this.busy());
    return new Promise((resolve, reject) => {
      const entry = {
        start: () => {
          clearTimeout(entry.timer);
          this.running++;
          resolve();
        },
        timer: setTimeout(() => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(this.busy());
        }, this.maxWaitMs),
      };
      this.waiting.push(entry);
    });
  }

  private release(): void {
    this.running--;
    this.waiting.shift()?.start();
  }

  private busy(): AppError {
    return new AppError('SERVICE_UNAVAILABLE', 'too many concurrent sign-ins, retry shortly', { retryAfter: 2 });
  }
}
