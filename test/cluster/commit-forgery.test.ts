// The commit check through real processes (docs/cluster.md "Commit checks"): nats-server with the
// users of `noded nats-auth`, the executor, consensus and state-stores as `noded service` processes.
// The normal chain applies (each height verified against genesis.json's validator and then each
// previous header); a state-store stopped and restarted resumes from its own last height and still
// verifies. Then a height forged with the executor's own login (it may publish on the blocks
// subject) and a genuine commit replayed from the height before is refused by a running replica
// and by a new one that verified the whole chain from genesis: each logs the reason, counts it in
// cometbft_state_store_commit_refusals_total, stays at the last real height and keeps serving it.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { StateReaderClient } from '@noded/abci-grpc';
import { decodeLightBlock } from '@noded/consensus';
import { keccak256 } from '@noded/crypto';
import { natsInboxPrefix } from '@noded/service-shared/src/nats.js';
import { blocksStreamName, blocksSubject, decodeCommitted, encodeCommitted } from '@noded/stream';
import { connect } from 'nats';
import { freePort, initLocalHome, runCli } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const metric = async (at: string, name: string): Promise<number> => {
  const text = await (await fetch(`http://${at}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.split(' ').at(-1));
  return sum;
};

describe('state-store: commit checks through real processes', () => {
  it('verifies the normal chain, after a restart too, and refuses a height forged with the executor login', async () => {
    const { home } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    assert.equal(runCli(['nats-auth', '--home', home]).code, 0);
    const natsDir = join(home, 'data', 'nats');
    const passwordOf = (user: string) => readFileSync(join(natsDir, `${user}.password`), 'utf8').trim();
    const nats = await startNatsServer({ config: readFileSync(join(natsDir, 'auth.conf'), 'utf8') });
    cleanups.push(() => nats.stop());
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_NATS_URL: nats.url,
    };
    const login = (user: string) => ({
      NODED_NATS_USER: user,
      NODED_NATS_PASSWORD_FILE: join(natsDir, `${user}.password`),
    });
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });
    const start = async (name: string, more: Record<string, string>) => {
      const s = spawnService(name, home, { ...env, ...more });
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      return s;
    };
    const storeEnv = async (db: string) => {
      const grpc = `127.0.0.1:${await freePort()}`;
      const metrics = `127.0.0.1:${await freePort()}`;
      return {
        grpc,
        metrics,
        env: {
          ...login('state-store'),
          NODED_STATE_STORE_DB: join(home, 'data', db),
          NODED_STATE_STORE_GRPC_ADDRESS: grpc,
          NODED_SERVICE_METRICS_ADDRESS: metrics,
        },
      };
    };
    const heightOf = async (grpc: string) => {
      const client = new StateReaderClient(grpc, { deadlineMs: 5_000 });
      try {
        return Number((await client.head()).latestHeight);
      } finally {
        client.close();
      }
    };

    await start('executor', login('executor'));
    const consensus = await start('consensus', {});
    const a = await storeEnv('store-a.db');
    let storeA = await start('state-store', a.env);
    await until('replica A applies height 3', 60_000, async () =>
      (await heightOf(a.grpc)) >= 3 ? true : undefined,
    );

    // Restarted from its own height, replica A verifies the heights made while it was away.
    const stoppedAt = await heightOf(a.grpc);
    await storeA.stop();
    await new Promise((r) => setTimeout(r, 1_500)); // about five more heights at 300 ms
    storeA = await start('state-store', a.env);
    const resumedFrom = Number(
      /"height":(\d+)[^\n]*following the committed heights/.exec(storeA.output())?.[1],
    );
    assert.ok(resumedFrom >= stoppedAt, `resumed from its own height ${resumedFrom} (had ${stoppedAt})`);

    // Consensus stops: no more real heights; the stream ends at the executor's last one.
    assert.equal(await consensus.stop(), 0);
    const executorLogin = {
      servers: nats.url,
      user: 'executor',
      pass: passwordOf('executor'),
      inboxPrefix: natsInboxPrefix('executor'),
    };
    const nc = await connect(executorLogin);
    cleanups.push(() => nc.close().catch(() => {}));
    const jsm = await nc.jetstreamManager();
    const stream = blocksStreamName('chain-local');
    const subject = blocksSubject('chain-local');
    const last = decodeCommitted((await jsm.streams.getMessage(stream, { last_by_subj: subject })).data);
    const top = last.height;
    assert.ok(top > resumedFrom, `the chain went on while A was away (${resumedFrom} -> ${top})`);
    await until('replica A applies every real height', 30_000, async () =>
      (await heightOf(a.grpc)) === top ? true : undefined,
    );
    assert.equal(await metric(a.metrics, 'cometbft_state_store_commit_refusals_total'), 0);
    assert.doesNotMatch(storeA.output(), /height refused/);

    // A replica from genesis verifies the whole chain (the first height against genesis.json's set).
    const b = await storeEnv('store-b.db');
    const storeB = await start('state-store', b.env);
    await until('replica B applies every real height', 60_000, async () =>
      (await heightOf(b.grpc)) === top ? true : undefined,
    );

    // The forgery: height top+1 chaining by parent hash, with the executor's login and the message
    // id the executor would use, carrying the genuine commit of height top (valid signatures of the
    // genesis validator, for another block).
    const fields = RLP.decode(last.headerRlp) as Uint8Array[];
    fields[0] = last.blockHash; // parent
    const n = (top + 1).toString(16);
    fields[8] = Uint8Array.from(Buffer.from(n.length % 2 ? `0${n}` : n, 'hex')); // number
    const headerRlp = RLP.encode(fields);
    assert.equal(decodeLightBlock(last.lightBlock!).header.height, top, 'the real top carries its commit');
    const forged = encodeCommitted({
      ...last,
      height: top + 1,
      parentHash: last.blockHash,
      headerRlp,
      blockHash: keccak256(headerRlp),
    });
    const ack = await nc.jetstream().publish(subject, forged, { msgID: String(top + 1) });
    assert.equal(ack.duplicate, false, 'the executor login may publish the forged height');

    for (const [name, s, at] of [
      ['A', storeA, a],
      ['B', storeB, b],
    ] as const) {
      await until(`replica ${name} refuses the forged height`, 30_000, async () =>
        (await metric(at.metrics, 'cometbft_state_store_commit_refusals_total')) >= 1 ? true : undefined,
      );
      assert.match(
        s.output(),
        new RegExp(
          `height ${top + 1} carries the commit of height ${top}[^\\n]*height refused: its commit does not verify`,
        ),
      );
      assert.match(
        await (await fetch(`http://${at.metrics}/metrics`)).text(),
        /cometbft_state_store_commit_refusals_total\{chain_id="chain-local",reason="NOT_THIS_BLOCK"\} [1-9]/,
      );
      assert.equal(s.proc.exitCode, null, `replica ${name} keeps running`);
      assert.equal(
        await heightOf(at.grpc),
        top,
        `replica ${name} stays at the last real height and serves it`,
      );
    }
  });
});
