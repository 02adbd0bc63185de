/**
 * A one-line progress bar for long CLI work: redrawn in place on a terminal, a plain line every
 * few seconds otherwise (CI logs, pipes).
 */
export class ProgressBar {
  private readonly started = Date.now();
  private lastPlain = 0;
  private finalShown = false;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {}

  update(done: number, detail = ""): void {
    const elapsed = (Date.now() - this.started) / 1000;
    const rate = elapsed > 0 ? done / elapsed : 0;
    const eta = rate > 0 ? Math.max(0, (this.total - done) / rate) : Number.NaN;
    const width = 24;
    const filled = Math.min(width, Math.round((done / Math.max(1, this.total)) * width));
    const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
    const text =
      `${this.label} ${bar} ${done}/${this.total} · ${rate.toFixed(1)}/s` +
      `${Number.isFinite(eta) ? ` · eta ${Math.ceil(eta)}s` : ""}${detail ? ` · ${detail}` : ""}`;
    if (this.stream.isTTY) {
      this.stream.write(`\r\x1b[2K${text}`);
    } else if (done >= this.total ? !this.finalShown : Date.now() - this.lastPlain >= 2000) {
      this.lastPlain = Date.now();
      this.finalShown = done >= this.total;
      this.stream.write(`${text}\n`);
    }
  }

  finish(): void {
    if (this.stream.isTTY) this.stream.write("\n");
  }
}
