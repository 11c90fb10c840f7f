// The node's logger: pino, writing JSON lines to the log file and readable lines on a terminal.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type DestinationStream, type Logger as PinoLogger, pino, type StreamEntry } from 'pino';
import pretty from 'pino-pretty';

export interface LoggerOptions {
  /**
   * trace | debug | info | warn | error | fatal | none, or CometBFT's "module:level,*:level" form
   * (the "*" entry, else the first, sets the level). Default "info".
   */
  level?: string;
  /** Log file (<home>/logs/noded.log): JSON lines, appended; directories are created. */
  file?: string;
  /** Human-readable lines on stdout (pino-pretty). Default: whether stdout is a TTY. */
  pretty?: boolean;
  /** Lowest level written to stdout (default: `level`); the file keeps `level`. */
  consoleLevel?: string;
  /** Also write to stdout (JSON lines unless pretty). Default true. */
  stdout?: boolean;
  /** Where "stdout" output goes (tests); default process.stdout. */
  stdoutStream?: NodeJS.WritableStream;
  /** Fields on every line, e.g. { chain_id }. */
  base?: Record<string, unknown>;
}

/** An unknown level name; the message names the value and the accepted ones. */
export class LogLevelError extends Error {
  readonly code = 'LOG_LEVEL';
  constructor(value: string) {
    super(`log level ${JSON.stringify(value)} is not one of trace, debug, info, warn, error, fatal, none`);
    this.name = 'LogLevelError';
  }
}

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

/** pino level for a CometBFT-style log_level value. */
export function pinoLevel(value: string | undefined): string {
  if (value === undefined || value.trim() === '') return 'info';
  let level = value.trim().toLowerCase();
  if (level.includes(':') || level.includes(',')) {
    const entries = level.split(',').map((e) => e.trim().split(':'));
    const star = entries.find(([module]) => module === '*');
    level = (star ?? entries[0])[1] ?? (star ?? entries[0])[0];
  }
  if (level === 'none' || level === 'off') return 'silent';
  if (level === 'warning') return 'warn';
  if (!LEVELS.has(level)) throw new LogLevelError(value);
  return level;
}

/**
 * Creates the node's pino logger. The result satisfies libs/types `Logger` (libs take it as that
 * port). Call `logger.flush()` before exit so the file gets the last lines.
 */
export function createLogger(opts: LoggerOptions = {}): PinoLogger {
  const level = pinoLevel(opts.level);
  const streams: StreamEntry[] = [];
  if (opts.file) {
    // Synchronous appends: the last lines before a crash reach the file, and flush() is always safe.
    mkdirSync(dirname(opts.file), { recursive: true });
    streams.push({
      level: level as StreamEntry['level'],
      stream: pino.destination({ dest: opts.file, sync: true }),
    });
  }
  if (opts.stdout !== false) {
    const out = opts.stdoutStream ?? process.stdout;
    const wantPretty = opts.pretty ?? Boolean((out as NodeJS.WriteStream).isTTY);
    const stream: DestinationStream = wantPretty
      ? pretty({
          destination: out,
          colorize: Boolean((out as NodeJS.WriteStream).isTTY),
          translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
          ignore: 'pid,hostname',
          sync: true,
        })
      : (out as DestinationStream);
    const consoleLevel = opts.consoleLevel === undefined ? level : pinoLevel(opts.consoleLevel);
    streams.push({ level: consoleLevel as StreamEntry['level'], stream });
  }
  const options = {
    level,
    base: opts.base ?? {},
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  if (streams.length === 0) return pino({ ...options, enabled: false });
  if (streams.length === 1) return pino(options, streams[0].stream);
  return pino(options, pino.multistream(streams));
}
