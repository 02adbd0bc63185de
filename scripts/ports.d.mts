/** Types of ports.mjs (a plain Node script, run without a TypeScript loader). */
export declare function ephemeralRange(): [number, number];
export declare function pickPool(): [number, number];
export declare function portIsFree(port: number, host?: string): Promise<boolean>;
export declare function freePort(host?: string, exclude?: number[]): Promise<number>;
