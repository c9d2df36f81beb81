import { MultiBar, Presets, type SingleBar } from 'cli-progress';

/** One line per action; progress bars for transfers when stdout is a terminal. */
export class Reporter {
  private readonly bars: MultiBar | undefined;
  private active = 0;

  constructor(readonly quiet = false) {
    this.bars = process.stdout.isTTY && !quiet
      ? new MultiBar({ format: ' {bar} {percentage}% | {name}', hideCursor: true, clearOnComplete: true, stopOnComplete: false }, Presets.shades_classic)
      : undefined;
  }

  line(message: string): void {
    // The multibar only prints its log while a bar is drawn.
    if (this.bars && this.active > 0) this.bars.log(`${message}\n`);
    else process.stdout.write(`${message}\n`);
  }

  error(message: string): void {
    process.stderr.write(`filesync: ${message}\n`);
  }

  /** A bar for one transfer (nothing off a terminal); call the returned function with bytes done, then `done()`. */
  progress(name: string, total: number): { update: (done: number) => void; done: () => void } {
    if (!this.bars || total < 256 * 1024) return { update: () => undefined, done: () => undefined };
    const bar: SingleBar = this.bars.create(total, 0, { name });
    this.active++;
    let open = true;
    return {
      update: (done) => bar.update(done),
      done: () => {
        if (!open) return;
        open = false;
        bar.stop();
        this.bars?.remove(bar);
        if (--this.active === 0) this.bars?.stop();
      },
    };
  }

  stop(): void {
    this.bars?.stop();
  }
}
