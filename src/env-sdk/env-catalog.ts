/** The envs one Worker (or one CLI run) can build, by name. */
import type { EnvDefinition } from "./define-env";

export class EnvCatalog {
  private readonly byName = new Map<string, EnvDefinition>();

  constructor(definitions: readonly EnvDefinition[]) {
    for (const definition of definitions) {
      if (this.byName.has(definition.name)) {
        throw new Error(
          `two envs are named "${definition.name}": give one of them another static envName`,
        );
      }
      this.byName.set(definition.name, definition);
    }
  }

  get(name: string): EnvDefinition {
    const definition = this.byName.get(name);
    if (!definition) {
      const known = [...this.byName.keys()].join(", ") || "none";
      throw new Error(`unknown env "${name}"; available: ${known}`);
    }
    return definition;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  list(): EnvDefinition[] {
    return [...this.byName.values()];
  }
}
