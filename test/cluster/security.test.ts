// Security inside the cluster (issue 22): nats-server with the users `noded nats-auth` writes (one per
// service, each limited to its own subjects) and gRPC with mutual TLS (openssl certificates), all
// services as processes. Each service with its own login and certificate works end to end (a
// transfer sent through the rpc-edge is committed and read back); a client with another service's
// login cannot publish on the blocks subject or purge the stream, and nothing of what it tried
// reaches the state-store; a client without a login is refused; a wrong password stops a service at
// start naming the user; a gRPC client without a certificate, or with one another CA signed, is
// refused by the executor and the state-store.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcApplication, mutualTlsChannelCredentials, StateReaderClient } from '@noded/abci-grpc';
import { natsInboxPrefix } from '@noded/service-shared/src/nats.js';
import { clusterSettingsOf } from '@noded/service-shared/src/settings.js';
import { blocksStreamName, blocksSubject, decodeCommitted, encodeCommitted } from '@noded/stream';
import { JsonRpcProvider, Wallet } from 'ethers';
import { connect, type NatsConnection } from 'nats';
import { DEV_KEYS, freePort, initLocalHome, runCli } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { rpc, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA and one certificate it signed for 127.0.0.1 (server and client use), as PEM files in `dir`. */
function makePki(dir: string, name: string): { ca: string; cert: string; key: string } {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    `${name}-ca.key`,
    '-out',
    `${name}-ca.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${name} test CA`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  openssl(dir, [
    'req',
    ...ec,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name} service`,
  ]);
  writeFileSync(
    join(dir, `${name}.ext`),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n',
  );
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${name}-ca.pem`,
    '-CAkey',
    `${name}-ca.key`,
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
  return { ca: join(dir, `${name}-ca.pem`), cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
}

const material = (p: { ca: string; cert: string; key: string }) => ({
  ca: readFileSync(p.ca),
  cert: readFileSync(p.cert),
  key: readFileSync(p.key),
});

describe('security inside the cluster', () => {
  it('per-service NATS logins and permissions, gRPC mutual TLS: the cluster works, intruders are refused', async () => {
    const { home } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const pkiDir = mkdtempSync(join(tmpdir(), 'noded-pki-'));
    cleanups.push(() => rmSync(pkiDir, { recursive: true, force: true }));
    const pki = makePki(pkiDir, 'cluster');
    const rogue = makePki(pkiDir, 'rogue');

    // The users and their password files, as `make cluster` writes them.
    const auth = runCli(['nats-auth', '--home', home]);
    assert.equal(auth.code, 0, auth.stderr);
    const natsDir = join(home, 'data', 'nats');
    const passwordOf = (user: string) => readFileSync(join(natsDir, `${user}.password`), 'utf8').trim();
    // Rerunning keeps the passwords (running services stay logged in).
    const before = passwordOf('executor');
    assert.equal(runCli(['nats-auth', '--home', home]).code, 0);
    assert.equal(passwordOf('executor'), before);

    const nats = await startNatsServer({ config: readFileSync(join(natsDir, 'auth.conf'), 'utf8') });
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const storeAt = `127.0.0.1:${await freePort()}`;
    const edgeHttp = await freePort();
    const edgeUrl = `http://127.0.0.1:${edgeHttp}`;
    const tlsEnv = {
      NODED_GRPC_TLS_CERT: pki.cert,
      NODED_GRPC_TLS_KEY: pki.key,
      NODED_GRPC_TLS_CA: pki.ca,
    };
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
      NODED_STATE_STORE_GRPC_ADDRESS: storeAt,
      NODED_NATS_URL: nats.url,
      NODED_EVM_RPC_ADDRESS: `127.0.0.1:${edgeHttp}`,
      NODED_EVM_WS_ADDRESS: `127.0.0.1:${await freePort()}`,
      ...tlsEnv,
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
    await start('executor', login('executor'));
    await start('consensus', {}); // no NATS: it only dials the executor (over mutual TLS)
    const store = await start('state-store', login('state-store'));
    const edge = await start('rpc-edge', login('rpc-edge'));

    // End to end: heights flow executor -> JetStream -> state-store -> edge, and a transfer sent
    // through the edge reaches the executor's mempool (mutual TLS) and is committed.
    await until('the edge serves height 3', 60_000, async () =>
      Number(await rpc(edgeUrl, 'eth_blockNumber')) >= 3 ? true : undefined,
    );
    const provider = new JsonRpcProvider(edgeUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      polling: true,
    });
    cleanups.push(() => provider.destroy());
    // The edge's pending-transaction filter is fed by the executor's txs.pending subject: it sees
    // the hash only if the executor may publish there and the edge may subscribe.
    const filter = (await rpc(edgeUrl, 'eth_newPendingTransactionFilter')) as string;
    const to = '0x00000000000000000000000000000000005ec0de';
    const tx = await new Wallet(DEV_KEYS[0]!, provider).sendTransaction({ to, value: 12345n });
    const seen: string[] = [];
    await until('the transfer on the pending filter', 20_000, async () => {
      seen.push(...((await rpc(edgeUrl, 'eth_getFilterChanges', [filter])) as string[]));
      return seen.includes(tx.hash) ? true : undefined;
    });
    const receipt = await tx.wait(1, 60_000);
    assert.equal(receipt?.status, 1);
    assert.equal(await provider.getBalance(to, receipt!.blockNumber), 12345n);
    assert.doesNotMatch(nats.output(), /Violation/, 'no service was refused anything it needs');

    // A client without a login is refused at connect.
    await assert.rejects(connect({ servers: nats.url, reconnect: false }), /Authorization Violation/i);

    // Intruders with the edge's and the state-store's logins try to append a height that does not
    // chain (it would stop every replica) and to purge the stream.
    const stream = blocksStreamName('chain-local');
    const subject = blocksSubject('chain-local');
    const intruders: NatsConnection[] = [];
    cleanups.push(() => Promise.all(intruders.map((nc) => nc.close().catch(() => {}))));
    for (const user of ['rpc-edge', 'state-store'] as const) {
      const nc = await connect({
        servers: nats.url,
        user,
        pass: passwordOf(user),
        inboxPrefix: natsInboxPrefix(user),
        reconnect: false,
      });
      intruders.push(nc);
    }
    const [asEdge, asStore] = intruders as [NatsConnection, NatsConnection];
    const jsm = await asStore.jetstreamManager();
    const top = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    const last = decodeCommitted(top.data);
    const forged = encodeCommitted({
      ...last,
      height: last.height + 1,
      parentHash: new Uint8Array(32).fill(7),
      blockHash: new Uint8Array(32).fill(8),
    });
    asEdge.publish(subject, forged);
    asStore.publish(subject, forged);
    await asEdge.flush().catch(() => {});
    await asStore.flush().catch(() => {});
    // Through JetStream: the publish is refused, so no acknowledgement ever comes.
    await assert.rejects(
      asStore.jetstream({ timeout: 2_000 }).publish(subject, forged, { msgID: `forged-${last.height + 1}` }),
    );
    await assert.rejects(jsm.streams.purge(stream), /permissions violation|timeout/i);
    await assert.rejects(jsm.streams.delete(stream), /permissions violation|timeout/i);
    await until('nats-server logs the refused publishes', 10_000, async () =>
      (nats.output().match(new RegExp(`Publish Violation.*Subject "${subject.replace(/\./g, '\\.')}"`, 'g'))
        ?.length ?? 0) >= 2
        ? true
        : undefined,
    );
    assert.match(nats.output(), /Publish Violation.*User "rpc-edge"/);
    assert.match(nats.output(), /Publish Violation.*User "state-store".*\$JS\.API\.STREAM\.PURGE/);

    // Nothing of it reached the stream or the replica: the stream still ends with the executor's
    // heights, each naming the one before, and the state-store keeps following past them.
    const heightNow = Number(await rpc(edgeUrl, 'eth_blockNumber'));
    await until('the state-store applies 3 more heights', 60_000, async () =>
      Number(await rpc(edgeUrl, 'eth_blockNumber')) >= heightNow + 3 ? true : undefined,
    );
    assert.equal(store.proc.exitCode, null, 'the state-store still runs');
    assert.equal(edge.proc.exitCode, null);
    assert.doesNotMatch(store.output(), /names parent|does not chain/);
    const info = await jsm.streams.info(stream);
    let parent: Uint8Array | undefined;
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const h = decodeCommitted((await jsm.streams.getMessage(stream, { seq })).data);
      assert.equal(h.height, seq - info.state.first_seq, `stream message ${seq} is height ${h.height}`);
      if (parent) assert.deepEqual(h.parentHash, parent, `height ${h.height} chains`);
      parent = h.blockHash;
    }
    const block = (await rpc(edgeUrl, 'eth_getBlockByNumber', [
      `0x${(last.height + 1).toString(16)}`,
      false,
    ])) as { parentHash: string };
    assert.equal(block.parentHash, `0x${Buffer.from(last.blockHash).toString('hex')}`);

    // gRPC: the executor and the state-store refuse a client without a certificate signed by the CA.
    const good = mutualTlsChannelCredentials(material(pki));
    const head = await new StateReaderClient(storeAt, { credentials: good, deadlineMs: 10_000 }).head();
    assert.equal(head.chainId, 'chain-local');
    const goodApp = new GrpcApplication(executorAt, { credentials: good });
    assert.ok((await goodApp.info()).lastBlockHeight >= 1);
    goodApp.close();
    const rogueCreds = mutualTlsChannelCredentials({ ...material(rogue), ca: readFileSync(pki.ca) });
    const noCert = grpc.credentials.createSsl(readFileSync(pki.ca));
    const plain = grpc.credentials.createInsecure();
    for (const [what, credentials] of [
      ['a certificate another CA signed', rogueCreds],
      ['no client certificate', noCert],
      ['plaintext', plain],
    ] as const) {
      const reader = new StateReaderClient(storeAt, { credentials, deadlineMs: 5_000 });
      await assert.rejects(
        reader.head(),
        /unavailable|UNAVAILABLE|handshake|closed|reset/i,
        `state-store: ${what}`,
      );
      reader.close();
      const app = new GrpcApplication(executorAt, { credentials, deadlinesMs: { info: 5_000 } });
      await assert.rejects(app.info(), /UNREACHABLE|unavailable|TIMEOUT/i, `executor: ${what}`);
      app.close();
    }

    // A wrong password stops a service at start with the reason; so does no login at all.
    const wrong = join(pkiDir, 'wrong.password');
    writeFileSync(wrong, 'not-the-password\n');
    const store2Env = {
      NODED_STATE_STORE_DB: join(pkiDir, 'ss2'),
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
    };
    const bad = spawnService('state-store', home, {
      ...env,
      ...store2Env,
      NODED_NATS_USER: 'state-store',
      NODED_NATS_PASSWORD_FILE: wrong,
    });
    running.push(bad);
    assert.equal(await bad.exited, 1, bad.output());
    assert.match(
      bad.output(),
      new RegExp(
        `nats-server at ${nats.url.replace(/\./g, '\\.')} refused user "state-store" \\(Authorization Violation\\): the password in \\$NODED_NATS_PASSWORD_FILE \\(${wrong.replace(/\./g, '\\.')}\\) is wrong`,
      ),
    );
    const anon = spawnService('state-store', home, { ...env, ...store2Env });
    running.push(anon);
    assert.equal(await anon.exited, 1, anon.output());
    assert.match(anon.output(), /requires a login \(Authorization Violation\): set \$NODED_NATS_USER/);
    assert.equal(store.proc.exitCode, null);
  });

  it('noded nats-auth writes the users for the home chain and refuses what it cannot use', async () => {
    const { home } = await initLocalHome();
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const out = mkdtempSync(join(tmpdir(), 'noded-auth-'));
    cleanups.push(() => rmSync(out, { recursive: true, force: true }));
    const ok = runCli(['nats-auth', '--home', home, '--out', out]);
    assert.equal(ok.code, 0, ok.stderr);
    const conf = readFileSync(join(out, 'auth.conf'), 'utf8');
    assert.match(conf, /user: "executor"/);
    assert.match(conf, /publish: \{ allow: \["noded\.chain-local\.blocks", /);
    assert.match(conf, /user: "rpc-edge"\n.*\n {6}permissions: \{\n {8}publish: \{ deny: \[">"\] \}/);
    for (const f of ['auth.conf', 'executor.password', 'state-store.password', 'rpc-edge.password'])
      assert.equal(statSync(join(out, f)).mode & 0o777, 0o600, f);
    // nats-server accepts the block as written.
    writeFileSync(join(out, 'server.conf'), 'include "auth.conf"\n');
    const t = spawnSync('nats-server', ['-c', join(out, 'server.conf'), '-t'], { encoding: 'utf8' });
    assert.equal(t.status, 0, t.stderr);
    writeFileSync(join(out, 'rpc-edge.password'), 'has "quotes"\n');
    const bad = runCli(['nats-auth', '--home', home, '--out', out]);
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /rpc-edge\.password holds a password with characters other than A-Z a-z 0-9 _ -/,
    );
    const none = runCli(['nats-auth', '--home', join(out, 'nothing')]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no node home at/);
  });

  it('refuses bad login and certificate settings by name before opening anything', () => {
    const dir = mkdtempSync(join(tmpdir(), 'noded-sec-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const pki = makePki(dir, 'a');
    const other = makePki(dir, 'b');
    const problemsOf = (env: Record<string, string>) => {
      const problems: string[] = [];
      const s = clusterSettingsOf(env, problems, dir, 'rpc-edge');
      return { problems, s };
    };
    const pw = join(dir, 'pw');
    writeFileSync(pw, 'secret\n');
    const ok = problemsOf({ NODED_NATS_USER: 'rpc-edge', NODED_NATS_PASSWORD_FILE: pw });
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.s.natsLogin?.pass, 'secret', 'the trailing newline is not part of the password');
    assert.deepEqual(problemsOf({ NODED_NATS_USER: 'rpc-edge' }).problems, [
      '$NODED_NATS_USER and $NODED_NATS_PASSWORD_FILE: set both or neither, got only $NODED_NATS_USER',
    ]);
    assert.deepEqual(
      problemsOf({ NODED_NATS_USER: 'rpc-edge', NODED_NATS_PASSWORD_FILE: join(dir, 'missing') }).problems,
      [`$NODED_NATS_PASSWORD_FILE: cannot read ${join(dir, 'missing')} (no such file)`],
    );
    writeFileSync(join(dir, 'two'), 'a\nb\n');
    assert.deepEqual(
      problemsOf({ NODED_NATS_USER: 'rpc-edge', NODED_NATS_PASSWORD_FILE: join(dir, 'two') }).problems,
      [
        `$NODED_NATS_PASSWORD_FILE: ${join(dir, 'two')} must hold the password on one line, got several lines`,
      ],
    );
    assert.match(
      problemsOf({ NODED_NATS_USER: 'a b', NODED_NATS_PASSWORD_FILE: pw }).problems.join('\n'),
      /\$NODED_NATS_USER: must be 1 to 64 of/,
    );

    const tls = (cert: string, key: string, ca: string) =>
      problemsOf({ NODED_GRPC_TLS_CERT: cert, NODED_GRPC_TLS_KEY: key, NODED_GRPC_TLS_CA: ca });
    const good = tls(pki.cert, pki.key, pki.ca);
    assert.deepEqual(good.problems, []);
    assert.ok(good.s.grpcTls?.cert.includes('BEGIN CERTIFICATE'));
    assert.equal(problemsOf({}).s.grpcTls, null, 'no variables: plaintext');
    assert.deepEqual(problemsOf({ NODED_GRPC_TLS_CERT: pki.cert }).problems, [
      '$NODED_GRPC_TLS_CERT, $NODED_GRPC_TLS_KEY and $NODED_GRPC_TLS_CA: set all three or none, got only $NODED_GRPC_TLS_CERT',
    ]);
    assert.deepEqual(tls(pki.cert, other.key, pki.ca).problems, [
      `$NODED_GRPC_TLS_KEY: ${other.key} is not the private key of the certificate ${pki.cert}`,
    ]);
    assert.deepEqual(tls(pki.cert, pki.key, other.ca).problems, [
      `$NODED_GRPC_TLS_CERT: ${pki.cert} is not signed by the CA of $NODED_GRPC_TLS_CA (${other.ca}); the peers would refuse it`,
    ]);
    const problems = tls(pki.key, pki.cert, pki.ca).problems;
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems[0]!, new RegExp(`^\\$NODED_GRPC_TLS_CERT: ${pki.key} is not a PEM certificate`));
    assert.match(problems[1]!, new RegExp(`^\\$NODED_GRPC_TLS_KEY: ${pki.cert} is not a PEM private key`));
  });
});
