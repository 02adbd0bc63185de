/**
 * A per-episode scratch filesystem: text files in memory under size caps. The `file_ops` tool
 * reads and writes it, and code runs see it as their scratch directory (files go in with the
 * request and come back with the result), so an episode's files persist across tool calls and
 * vanish with the episode.
 */

export interface ScratchLimits {
  /** At most this many files (default 64). */
  maxFiles: number;
  /** Per file, in UTF-16 code units (default 64 KiB). */
  maxFileChars: number;
  /** All files together (default 512 KiB). */
  maxTotalChars: number;
}

export const DEFAULT_SCRATCH_LIMITS: ScratchLimits = {
  maxFiles: 64,
  maxFileChars: 64 * 1024,
  maxTotalChars: 512 * 1024,
};

const NAME = /^[\w.-]+(\/[\w.-]+)*$/;

export class ScratchFs {
  private readonly files = new Map<string, string>();
  readonly limits: ScratchLimits;

  constructor(limits: Partial<ScratchLimits> = {}) {
    this.limits = { ...DEFAULT_SCRATCH_LIMITS, ...limits };
  }

  /** A relative path of letters, digits, `.`, `-`, `_` and `/`; no `..`, no leading `/`. */
  static normalize(path: string): string {
    const trimmed = path.trim().replace(/^\.\//, "");
    if (!NAME.test(trimmed) || trimmed.split("/").some((part) => part === ".." || part === ".")) {
      throw new Error(
        `bad path '${path}': use a relative path of letters, digits, . - _ and / (no '..')`,
      );
    }
    return trimmed;
  }

  write(path: string, content: string): void {
    const name = ScratchFs.normalize(path);
    if (content.length > this.limits.maxFileChars) {
      throw new Error(
        `'${name}' would be ${content.length} chars; the limit is ${this.limits.maxFileChars}`,
      );
    }
    if (!this.files.has(name) && this.files.size >= this.limits.maxFiles) {
      throw new Error(`the scratch space holds at most ${this.limits.maxFiles} files`);
    }
    const total = this.totalChars() - (this.files.get(name)?.length ?? 0) + content.length;
    if (total > this.limits.maxTotalChars) {
      throw new Error(
        `the scratch space would hold ${total} chars; the limit is ${this.limits.maxTotalChars}`,
      );
    }
    this.files.set(name, content);
  }

  read(path: string): string {
    const name = ScratchFs.normalize(path);
    const content = this.files.get(name);
    if (content === undefined) throw new Error(`no file '${name}'`);
    return content;
  }

  delete(path: string): boolean {
    return this.files.delete(ScratchFs.normalize(path));
  }

  list(): string[] {
    return [...this.files.keys()].sort();
  }

  totalChars(): number {
    let total = 0;
    for (const content of this.files.values()) total += content.length;
    return total;
  }

  /** Every file, for a code run's request. */
  snapshot(): Record<string, string> {
    return Object.fromEntries(this.files);
  }

  /**
   * Take a code run's files as the new contents. Files over the caps are left out and named in
   * the returned list; the rest are kept.
   */
  replaceWith(files: Record<string, string>): string[] {
    this.files.clear();
    const refused: string[] = [];
    for (const [path, content] of Object.entries(files)) {
      try {
        this.write(path, content);
      } catch {
        refused.push(path);
      }
    }
    return refused;
  }
}
