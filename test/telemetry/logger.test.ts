// createLogger: JSON lines to the log file, readable lines for a terminal, CometBFT level names.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger, LogLevelError, pinoLevel } from '@noded/telemetry';
import type { Logger } from '@noded/types';

const flush = (l: { flush(cb?: (err?: Error) => void): void }) =>
  new Promise<void>((r) => l.flush(() => r()));

describe('createLogger', () => {
  it('writes JSON lines to the file (directories created) at the chosen level', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-log-'));
    try {
      const file = join(dir, 'logs', 'noded.log');
      const logger = createLogger({ level: 'info', file, stdout: false, base: { chain_id: 'chain-local' } });
      const port: Logger = logger; // satisfies the libs/types port
      port.info({ height: 5 }, 'committed block');
      port.debug('hidden at info');
      port.child({ module: 'rpc' }).warn('slow client');
      await flush(logger);
      const deadline = Date.now() + 2000;
      let text = '';
      while (Date.now() < deadline) {
        text = readFileSync(file, 'utf8');
        if (text.split('\n').filter(Boolean).length >= 2) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const lines = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, 2);
      assert.equal(lines[0].level, 'info');
      assert.equal(lines[0].msg, 'committed block');
      assert.equal(lines[0].height, 5);
      assert.equal(lines[0].chain_id, 'chain-local');
      assert.match(lines[0].time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.deepEqual([lines[1].level, lines[1].module, lines[1].msg], ['warn', 'rpc', 'slow client']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pretty = true prints readable lines, not JSON; pretty = false prints JSON', async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d) => {
      text += d.toString();
    });
    const logger = createLogger({ level: 'debug', pretty: true, stdoutStream: out });
    logger.debug({ peer: 'abc' }, 'dialing peer');
    await new Promise((r) => setTimeout(r, 50));
    assert.match(text, /DEBUG/);
    assert.match(text, /dialing peer/);
    assert.match(text, /peer: "abc"/);
    assert.throws(() => JSON.parse(text.trim()));

    const raw = new PassThrough();
    let json = '';
    raw.on('data', (d) => {
      json += d.toString();
    });
    createLogger({ level: 'info', pretty: false, stdoutStream: raw }).info('plain');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(JSON.parse(json.trim()).msg, 'plain');
  });

  it('maps CometBFT log_level values and refuses unknown ones', () => {
    assert.equal(pinoLevel(undefined), 'info');
    assert.equal(pinoLevel('DEBUG'), 'debug');
    assert.equal(pinoLevel('main:info,state:info,*:error'), 'error');
    assert.equal(pinoLevel('consensus:debug'), 'debug');
    assert.equal(pinoLevel('none'), 'silent');
    assert.equal(pinoLevel('warning'), 'warn');
    assert.throws(
      () => pinoLevel('loud'),
      (err: Error) => err instanceof LogLevelError && /"loud" is not one of/.test(err.message),
    );
  });
});
