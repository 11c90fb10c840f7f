// noded logs [--follow] [--lines N]: shows the node's log file (pino JSON lines) as readable lines.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { homePaths } from '@noded/config';
import type { Command } from 'commander';
import { addHomeOption, CliError, type HomeOpts, homeOf, positiveInt } from '../util.js';

interface LogsOpts extends HomeOpts {
  follow?: boolean;
  lines: string;
  logFile?: string;
  raw?: boolean;
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const SKIP = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'module', 'v']);

/** One pino JSON line as "time LEVEL [module] msg key=value ..."; other lines unchanged. */
export function formatLogLine(line: string): string {
  if (!line.startsWith('{')) return line;
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line);
  } catch {
    return line;
  }
  const time = typeof rec.time === 'number' ? new Date(rec.time).toISOString() : String(rec.time ?? '');
  const level = (LEVELS[rec.level as number] ?? String(rec.level ?? '')).padEnd(5);
  const module = rec.module !== undefined ? ` [${rec.module}]` : '';
  const extra = Object.entries(rec)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${time} ${level}${module} ${rec.msg ?? ''}${extra ? ` ${extra}` : ''}`;
}

function readRange(file: string, start: number, end: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(end - start);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, start + off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

/** Byte offset where the last `n` lines of the file begin (reads backwards in chunks). */
function tailStart(file: string, size: number, n: number): number {
  let pos = size;
  let newlines = 0;
  // A trailing newline ends the last line; it does not start another.
  let skipLast = size > 0 && readRange(file, size - 1, size)[0] === 0x0a;
  while (pos > 0) {
    const start = Math.max(0, pos - 65536);
    const chunk = readRange(file, start, pos);
    for (let i = chunk.length - 1; i >= 0; i--) {
      if (chunk[i] !== 0x0a) continue;
      if (skipLast) {
        skipLast = false;
        continue;
      }
      newlines++;
      if (newlines === n) return start + i + 1;
    }
    pos = start;
  }
  return 0;
}

export function registerLogs(program: Command): void {
  addHomeOption(
    program
      .command('logs')
      .description("show the node's log file (default <home>/logs/noded.log)")
      .option('-f, --follow', 'keep printing new lines as the node writes them (Ctrl-C stops)')
      .option('-n, --lines <n>', 'how many of the last lines to show', '100')
      .option('--log-file <path>', 'log file to read (default: <home>/logs/noded.log)')
      .option('--raw', 'print the JSON lines as written'),
  ).action(async (opts: LogsOpts) => {
    const lines = positiveInt('--lines', opts.lines);
    const file = opts.logFile !== undefined ? resolve(opts.logFile) : homePaths(homeOf(opts)).logFile;
    if (!existsSync(file)) {
      throw new CliError(
        `no log file at ${file} (the node writes it once started with this home; see --log-file)`,
      );
    }
    const show = (text: string) => {
      for (const l of text.split('\n'))
        if (l !== '') process.stdout.write(`${opts.raw ? l : formatLogLine(l)}\n`);
    };
    let size = statSync(file).size;
    show(readRange(file, tailStart(file, size, lines), size).toString('utf8'));
    if (!opts.follow) return;

    let partial = '';
    await new Promise<void>((done) => {
      const timer = setInterval(() => {
        let now: number;
        try {
          now = statSync(file).size;
        } catch {
          return; // rotated away; wait for the new file
        }
        if (now < size) size = 0; // truncated or replaced: start again from the top
        if (now === size) return;
        const text = partial + readRange(file, size, now).toString('utf8');
        size = now;
        const cut = text.lastIndexOf('\n');
        partial = text.slice(cut + 1);
        show(text.slice(0, cut + 1));
      }, 200);
      const stop = () => {
        clearInterval(timer);
        done();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });
}
