// Just enough of Node's types for `tsc` to check index.d.ts without @types/node
// (not installed here): the few names index.d.ts imports.

declare module 'node:events' {
  export class EventEmitter {
    on(event: string | symbol, listener: (...args: any[]) => void): this;
    once(event: string | symbol, listener: (...args: any[]) => void): this;
    off(event: string | symbol, listener: (...args: any[]) => void): this;
    emit(event: string | symbol, ...args: any[]): boolean;
  }
}

declare module 'node:stream' {
  export class Stream {}
}

declare module 'node:child_process' {
  import { Stream } from 'node:stream';
  export class ChildProcess {
    readonly pid?: number;
    kill(signal?: string): boolean;
  }
  export type StdioNull = 'inherit' | 'ignore' | Stream;
  export type StdioPipe = undefined | null | 'pipe' | 'overlapped';
}

declare namespace NodeJS {
  interface ProcessEnv {
    [key: string]: string | undefined;
  }
}
