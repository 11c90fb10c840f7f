// What the full node (node.ts) and the light node (light-node.ts) share as processes: listen
// addresses, the components to close in reverse order of opening, and the RunningNode handle that
// `noded start` waits on and stops.
import type { Logger } from '@noded/types';
import type { RunningNode } from './cli/commands/start.js';

interface Closer {
  name: string;
  close(): Promise<void> | void;
}

/**
 * The components of a running node, closed in reverse order of `add` (last opened, first closed),
 * and the promise `noded start` waits on: resolved by stop(), rejected by fail().
 */
export class NodeLifecycle {
  private readonly closers: Closer[] = [];
  private resolveDone: () => void = () => {};
  private rejectDone: (err: Error) => void = () => {};
  private stopping: Promise<void> | undefined;
  /** Whether the node serves (false while starting and stopping): /readyz reads it. */
  serving = false;
  readonly done = new Promise<void>((resolve, reject) => {
    this.resolveDone = resolve;
    this.rejectDone = reject;
  });

  constructor(
    private readonly log: Logger,
    private readonly flush?: () => void,
  ) {}

  add(name: string, close: () => Promise<void> | void): void {
    this.closers.push({ name, close });
  }

  /** Adds a component that closes right after the one named `other` (which it outlives). */
  addClosingAfter(name: string, close: () => Promise<void> | void, other: string): void {
    const i = this.closers.findIndex((c) => c.name === other);
    this.closers.splice(i < 0 ? this.closers.length : i, 0, { name, close });
  }

  async closeAll(): Promise<void> {
    for (const c of this.closers.reverse()) {
      try {
        await c.close();
      } catch (err) {
        this.log.error({ component: c.name, err: (err as Error).message }, 'error while stopping');
      }
    }
    this.closers.length = 0;
  }

  /** A component failed for good: close everything and reject `done` with the error. */
  fail(err: Error): void {
    void this.closeAll().finally(() => this.rejectDone(err));
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.serving = false;
      this.log.info('stopping');
      await this.closeAll();
      this.flush?.();
      this.resolveDone();
    })();
    return this.stopping;
  }

  handle(): RunningNode {
    return { done: this.done, stop: () => this.stop() };
  }
}
