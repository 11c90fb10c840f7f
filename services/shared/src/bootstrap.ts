// The one bootstrap every cluster service shares: a NestJS application context (no HTTP adapter:
// each service opens its own servers through the libs) built from the service's dynamic module,
// the pino logger handed to Nest, and a handle the CLI waits on and stops. Providers register what
// they open with `Closers`, so a start that fails half-way still closes what it opened.
import 'reflect-metadata';
import type { DynamicModule, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLogger } from '@noded/telemetry';
import type { Logger } from '@noded/types';
import { logReclaim, startIdleReclaim } from './idle-reclaim.js';
import { type Flushable, logNativeStatus, nativeReclaim, startBusyTrim } from './native-reclaim.js';
import type { ServiceSettings } from './settings.js';
import { startTracing } from './tracing.js';

/** Injection tokens of what every service module gets. */
export const SERVICE_SETTINGS = Symbol('ServiceSettings');
export const SERVICE_LOGGER = Symbol('Logger');
export const SERVICE_FATAL = Symbol('ServiceFatal');

/** Reports an unrecoverable failure: the CLI closes the service and exits non-zero. */
export type ServiceFatal = (err: Error) => void;

interface Closer {
  name: string;
  close(): Promise<void> | void;
}

/** What a service opened, closed in reverse order (last opened, first closed), once. */
export class Closers {
  private readonly list: Closer[] = [];
  private readonly open = new Set<Flushable>();
  constructor(private readonly log: Logger) {}

  add(name: string, close: () => Promise<void> | void): void {
    this.list.push({ name, close });
  }

  /**
   * A database the service opened: closed as add() closes, and flushed meanwhile when the service
   * goes quiet after a load (native-reclaim.ts).
   */
  addDatabase(name: string, db: Flushable & { close(): Promise<void> | void }): void {
    this.open.add(db);
    this.add(name, () => {
      this.open.delete(db);
      return db.close();
    });
  }

  /** The databases open now (addDatabase), for the quiet-time flush. */
  databases(): Flushable[] {
    return [...this.open];
  }

  async closeAll(): Promise<void> {
    while (this.list.length > 0) {
      const c = this.list.pop()!;
      try {
        await c.close();
      } catch (err) {
        this.log.error({ component: c.name, err: (err as Error).message }, 'error while stopping');
      }
    }
  }
}

/** Nest's own messages (module wiring, lifecycle) go to the service's log as module "nest". */
function nestLogger(log: Logger): LoggerService {
  const text = (m: unknown) => (typeof m === 'string' ? m : JSON.stringify(m));
  return {
    log: (m) => log.debug(text(m)),
    error: (m, trace?: string) => log.error({ trace }, text(m)),
    warn: (m) => log.warn(text(m)),
    debug: (m) => log.debug(text(m)),
    verbose: (m) => log.trace?.(text(m)),
    fatal: (m) => log.error(text(m)),
  };
}

export interface RunningService {
  logger: Logger;
  /** Stops the service (Nest's shutdown hooks, then every closer). */
  stop(): Promise<void>;
  /** Resolves when stop() is done; rejects with the error of a fatal failure. */
  done: Promise<void>;
}

export type ServiceModuleFactory = (
  settings: ServiceSettings,
  shared: { logger: Logger; closers: Closers; fatal: ServiceFatal },
) => DynamicModule;

export async function bootstrapService(
  settings: ServiceSettings,
  moduleOf: ServiceModuleFactory,
  opts: { logFormat?: 'plain' | 'json' } = {},
): Promise<RunningService> {
  const human = opts.logFormat === 'plain' && process.stdout.isTTY === true;
  const logger = createLogger({
    level: settings.logLevel,
    file: settings.logFile ?? undefined,
    pretty: human,
    base: { service: settings.name },
  });
  const log = logger.child({ module: 'service' });
  const closers = new Closers(log);
  // First opened, last closed: spans of the other closers' work are still exported.
  const tracing = await startTracing(settings.tracing, log);
  if (tracing) closers.add('tracing', () => tracing.shutdown());
  let resolveDone: () => void = () => {};
  let rejectDone: (err: Error) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  let app: Awaited<ReturnType<typeof NestFactory.createApplicationContext>> | undefined;
  let stopping: Promise<void> | undefined;
  const shutdown = async () => {
    if (app) await app.close();
    await closers.closeAll();
    logger.flush?.();
  };
  const fatal: ServiceFatal = (err) => {
    if (stopping) return;
    log.error({ err: err.message }, 'unrecoverable error; stopping the service');
    stopping = shutdown();
    void stopping.finally(() => rejectDone(err));
  };
  try {
    app = await NestFactory.createApplicationContext(moduleOf(settings, { logger, closers, fatal }), {
      logger: nestLogger(logger.child({ module: 'nest' })),
      abortOnError: false,
    });
    await app.init();
  } catch (err) {
    await closers.closeAll();
    logger.flush?.();
    throw err;
  }
  // The service's main thread, as `noded start`'s: its heap, then its databases' memtables and glibc's
  // heaps, given back once it goes quiet after a load.
  logNativeStatus(log);
  const reclaim = startIdleReclaim(logReclaim(log, 'main'), {
    onQuiet: nativeReclaim(() => closers.databases(), log),
  });
  if (reclaim) closers.add('idle-reclaim', () => reclaim.stop());
  const stopTrim = startBusyTrim(log);
  if (stopTrim) closers.add('busy-trim', stopTrim);
  log.info({ home: settings.home, chainId: settings.genesis.runtime.chainId }, 'service started');
  return {
    logger,
    done,
    stop: () => {
      stopping ??= (async () => {
        log.info('stopping');
        await shutdown();
        resolveDone();
      })();
      return stopping;
    },
  };
}
