// Crash injection shared by a simulated node's disk, stores and application: once armed, the n-th
// durable operation throws SimCrash, so crashes land in the middle of a commit, a WAL write or a
// signature, not only between messages.

export class SimCrash extends Error {
  constructor() {
    super('simulated crash');
    this.name = 'SimCrash';
  }
}

export class CrashSwitch {
  private countdown: number | null = null;
  crashed = false;

  arm(afterOps: number): void {
    this.countdown = afterOps;
  }

  disarm(): void {
    this.countdown = null;
    this.crashed = false;
  }

  /** Called before each durable operation; throws when the armed count runs out. */
  tick(): void {
    if (this.crashed) throw new SimCrash();
    if (this.countdown === null) return;
    if (this.countdown <= 0) {
      this.crashed = true;
      this.countdown = null;
      throw new SimCrash();
    }
    this.countdown--;
  }
}
