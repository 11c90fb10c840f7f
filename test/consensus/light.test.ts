// Light client verification with real ed25519 signatures: adjacent and skipping rules, every
// refusal reason (forged signature, too little power, wrong chain, expired trust, validators_hash
// mismatches, time), bisection across a rotating validator set, the wire encoding, and the follow
// loop (trust root from genesis, following, refusing a forged header without advancing, backfill).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ConsensusError,
  decodeLightBlock,
  encodeLightBlock,
  headerHash,
  type LightBlock,
  LightClient,
  LightClientError,
  type LightProvider,
  LightStore,
  type TrustOptions,
  verifyAdjacent,
  verifyBackwards,
  verifyLightBlock,
  verifyNonAdjacent,
  verifySkipping,
  verifyTrustRoot,
} from '@noded/consensus';
import { ed25519Verify, sha256 } from '@noded/crypto';
import { MemoryKV } from '@noded/storage';
import type { Logger, TimeNs } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME } from './helpers.js';
import { chain, HOUR, KEYS, lightBlock, S, setOf } from './light-helpers.js';

function opts(now: TimeNs = GENESIS_TIME + 100n * S, period: bigint = 168n * HOUR): TrustOptions {
  return { trustingPeriodNs: period, maxClockDriftNs: 10n * S, now };
}

function refusedWith(code: string, fn: () => unknown, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof LightClientError, `expected a LightClientError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (message) assert.match(err.message, message);
    return true;
  });
}

const four = setOf(KEYS.slice(0, 4));

describe('light client: adjacent verification', () => {
  const [b1, b2] = chain(2, () => four);

  it('accepts the next header signed by its validators', () => {
    verifyAdjacent(CHAIN_ID, b1!, b2!, opts(), ed25519Verify);
    verifyLightBlock(CHAIN_ID, b1!, b2!, opts(), ed25519Verify);
  });

  it('refuses a forged signature, naming it', () => {
    const forged = structuredClone(b2!);
    forged.commit.signatures[1]!.signature[5]! ^= 0xff;
    refusedWith(
      'FORGED_SIGNATURE',
      () => verifyAdjacent(CHAIN_ID, b1!, forged, opts(), ed25519Verify),
      /signature 1 is invalid/,
    );
  });

  it('refuses a header whose fields were changed after signing', () => {
    const forged = structuredClone(b2!);
    forged.header.appHash = sha256(new TextEncoder().encode('forged state'));
    // The commit no longer names this header...
    refusedWith(
      'INVALID_LIGHT_BLOCK',
      () => verifyAdjacent(CHAIN_ID, b1!, forged, opts(), ed25519Verify),
      /hashes to/,
    );
    // ...and pointing it at the new hash leaves every signature over the old one.
    forged.commit.blockId = { ...forged.commit.blockId, hash: headerHash(forged.header) };
    refusedWith('FORGED_SIGNATURE', () => verifyAdjacent(CHAIN_ID, b1!, forged, opts(), ed25519Verify));
  });

  it('refuses a header signed by 2/3 or less of the power', () => {
    const half = lightBlock({
      height: 2,
      vals: four,
      lastBlockId: b1!.commit.blockId,
      signs: (k) => k === KEYS[0] || k === KEYS[1],
    });
    refusedWith(
      'INSUFFICIENT_POWER',
      () => verifyAdjacent(CHAIN_ID, b1!, half, opts(), ed25519Verify),
      /power 20 of 40: not more than 2\/3/,
    );
    const threeOfFour = lightBlock({ height: 2, vals: four, signs: (k) => k !== KEYS[3] });
    verifyAdjacent(CHAIN_ID, b1!, threeOfFour, opts(), ed25519Verify);
  });

  it('refuses a header of another chain', () => {
    const other = lightBlock({ height: 2, vals: four, chainId: 'other-chain' });
    refusedWith(
      'WRONG_CHAIN',
      () => verifyAdjacent(CHAIN_ID, b1!, other, opts(), ed25519Verify),
      /another chain "other-chain", not "test-chain"/,
    );
  });

  it('refuses when the trusted header is older than the trusting period', () => {
    const now = b1!.header.time + 2n * HOUR;
    refusedWith(
      'EXPIRED',
      () => verifyAdjacent(CHAIN_ID, b1!, b2!, opts(now, HOUR), ed25519Verify),
      /has expired at/,
    );
    verifyAdjacent(CHAIN_ID, b1!, b2!, opts(b1!.header.time + HOUR - 1n, HOUR), ed25519Verify);
  });

  it('refuses a validator set that is not the one the header names', () => {
    const supplied = { ...b2!, validators: setOf(KEYS.slice(4, 8)).validators };
    refusedWith(
      'VALIDATORS_HASH',
      () => verifyAdjacent(CHAIN_ID, b1!, supplied, opts(), ed25519Verify),
      /to match those that were supplied/,
    );
  });

  it("refuses a header whose validators are not the trusted header's next validators", () => {
    const other = setOf(KEYS.slice(4, 8));
    const b2other = lightBlock({ height: 2, vals: other });
    refusedWith(
      'NEXT_VALIDATORS_HASH',
      () => verifyAdjacent(CHAIN_ID, b1!, b2other, opts(), ed25519Verify),
      /next validators/,
    );
  });

  it('refuses a header not after the trusted one in time, or from the future', () => {
    const early = lightBlock({ height: 2, vals: four, time: b1!.header.time });
    refusedWith('TIME', () => verifyAdjacent(CHAIN_ID, b1!, early, opts(), ed25519Verify));
    const future = lightBlock({ height: 2, vals: four, time: GENESIS_TIME + 1000n * S });
    refusedWith(
      'FUTURE',
      () => verifyAdjacent(CHAIN_ID, b1!, future, opts(GENESIS_TIME + 100n * S), ed25519Verify),
      /from the future/,
    );
  });

  it('refuses heights that are not adjacent or not increasing', () => {
    const b3 = lightBlock({ height: 3, vals: four });
    refusedWith('HEIGHT', () => verifyAdjacent(CHAIN_ID, b1!, b3, opts(), ed25519Verify));
    refusedWith('HEIGHT', () => verifyNonAdjacent(CHAIN_ID, b3, b1!, opts(), ed25519Verify), /greater than/);
  });

  it('refuses a commit whose signer is not the validator at that index', () => {
    const swapped = structuredClone(b2!);
    swapped.commit.signatures[0]!.validatorAddress = swapped.commit.signatures[1]!.validatorAddress;
    refusedWith('INVALID_LIGHT_BLOCK', () => verifyAdjacent(CHAIN_ID, b1!, swapped, opts(), ed25519Verify));
  });
});

describe('light client: skipping verification (trust level 1/3)', () => {
  const trusted = lightBlock({ height: 1, vals: four });

  it('skips to a header whose signers hold more than 1/3 of the trusted power', () => {
    // Validators 2 and 3 (20 of the trusted 40) are in the new set of six.
    const target = lightBlock({ height: 10, vals: setOf(KEYS.slice(2, 8)) });
    verifyNonAdjacent(CHAIN_ID, trusted, target, opts(), ed25519Verify);
    verifyLightBlock(CHAIN_ID, trusted, target, opts(), ed25519Verify);
  });

  it('refuses to skip when the overlap is 1/3 or less (bisection is then needed)', () => {
    const target = lightBlock({ height: 10, vals: setOf(KEYS.slice(3, 9)) });
    refusedWith(
      'NOT_ENOUGH_TRUST',
      () => verifyNonAdjacent(CHAIN_ID, trusted, target, opts(), ed25519Verify),
      /power 10 of 40/,
    );
    // Exactly 1/3 is not more than 1/3.
    const three = lightBlock({ height: 1, vals: setOf(KEYS.slice(0, 3)) });
    const t2 = lightBlock({ height: 10, vals: setOf([KEYS[2]!, ...KEYS.slice(5, 10)]) });
    refusedWith(
      'NOT_ENOUGH_TRUST',
      () => verifyNonAdjacent(CHAIN_ID, three, t2, opts(), ed25519Verify),
      /power 10 of 30/,
    );
  });

  it('refuses a skip whose trusted signers signed something else', () => {
    const target = lightBlock({ height: 10, vals: setOf(KEYS.slice(2, 8)) });
    const i = target.validators.findIndex((v) => Buffer.compare(v.address, KEYS[2]!.address) === 0);
    target.commit.signatures[i]!.signature[0]! ^= 1;
    refusedWith('FORGED_SIGNATURE', () =>
      verifyNonAdjacent(CHAIN_ID, trusted, target, opts(), ed25519Verify),
    );
  });

  it('refuses a skip whose own set signed with too little power even if the trusted overlap is enough', () => {
    const target = lightBlock({
      height: 10,
      vals: setOf(KEYS.slice(0, 8)),
      signs: (k) => KEYS.indexOf(k) < 4,
    });
    refusedWith('INSUFFICIENT_POWER', () =>
      verifyNonAdjacent(CHAIN_ID, trusted, target, opts(), ed25519Verify),
    );
  });

  it('bisects across a validator set that rotates completely', async () => {
    // One validator replaced every 3 heights: height 1 has keys 0-3, height 30 keys 9-12... (mod 12).
    const setAt = (h: number) => {
      const first = Math.floor((h - 1) / 3);
      return setOf([0, 1, 2, 3].map((i) => KEYS[(first + i) % KEYS.length]!));
    };
    const blocks = chain(30, setAt);
    const fetched: number[] = [];
    const verified = await verifySkipping(
      CHAIN_ID,
      blocks[0]!,
      blocks[29]!,
      async (h) => {
        fetched.push(h);
        return blocks[h - 1]!;
      },
      opts(),
      ed25519Verify,
    );
    assert.equal(verified.at(-1)!.header.height, 30);
    assert.ok(fetched.length > 0, 'bisection fetched intermediate headers');
    const heights = verified.map((b) => b.header.height);
    assert.deepEqual(
      heights,
      [...heights].sort((a, b) => a - b),
    );
    // Directly, the first set has no say over the last one.
    refusedWith('NOT_ENOUGH_TRUST', () =>
      verifyNonAdjacent(CHAIN_ID, blocks[0]!, blocks[29]!, opts(), ed25519Verify),
    );
  });

  it('bisection stops at the first forged header on the way', async () => {
    const setAt = (h: number) => setOf([0, 1, 2, 3].map((i) => KEYS[(Math.floor((h - 1) / 3) + i) % 12]!));
    const blocks = chain(30, setAt);
    const forged = structuredClone(blocks[14]!);
    for (const s of forged.commit.signatures) s.signature[0]! ^= 1;
    await assert.rejects(
      verifySkipping(
        CHAIN_ID,
        blocks[0]!,
        blocks[29]!,
        async (h) => (h === 15 ? forged : blocks[h - 1]!),
        opts(),
        ed25519Verify,
      ),
      (err: unknown) =>
        err instanceof LightClientError && err.code === 'FORGED_SIGNATURE' && err.height === 15,
    );
  });
});

describe('light client: roots, backwards links, encoding', () => {
  it('verifies a trust root by hash or by the genesis validators', () => {
    const b1 = lightBlock({ height: 1, vals: four });
    verifyTrustRoot(CHAIN_ID, b1, { height: 1, validatorsHash: four.hash() }, opts(), ed25519Verify);
    verifyTrustRoot(CHAIN_ID, b1, { hash: headerHash(b1.header) }, opts(), ed25519Verify);
    refusedWith('HASH_MISMATCH', () =>
      verifyTrustRoot(CHAIN_ID, b1, { hash: new Uint8Array(32) }, opts(), ed25519Verify),
    );
    refusedWith('VALIDATORS_HASH', () =>
      verifyTrustRoot(
        CHAIN_ID,
        b1,
        { validatorsHash: setOf(KEYS.slice(4, 8)).hash() },
        opts(),
        ed25519Verify,
      ),
    );
    refusedWith('EXPIRED', () =>
      verifyTrustRoot(CHAIN_ID, b1, {}, opts(GENESIS_TIME + 2n * HOUR, HOUR), ed25519Verify),
    );
  });

  it('verifies a header below a trusted one through last_block_id', () => {
    const [b1, b2] = chain(2, () => four);
    verifyBackwards(CHAIN_ID, b2!.header, b1!, ed25519Verify);
    const other = lightBlock({ height: 1, vals: four, time: GENESIS_TIME });
    refusedWith('HASH_MISMATCH', () => verifyBackwards(CHAIN_ID, b2!.header, other, ed25519Verify));
  });

  it('round-trips a light block through its protobuf encoding and refuses garbage', () => {
    const b = lightBlock({ height: 7, vals: setOf(KEYS.slice(0, 5), [50n, 40n, 30n, 20n, 10n]) });
    const back = decodeLightBlock(encodeLightBlock(b));
    assert.deepEqual(back, b);
    verifyTrustRoot(CHAIN_ID, back, { hash: headerHash(b.header) }, opts(), ed25519Verify);
    assert.throws(() => decodeLightBlock(Uint8Array.of(0x0a, 0xff, 0x01)), ConsensusError);
    assert.throws(() => decodeLightBlock(new Uint8Array(0)), /no signed header/);
  });
});

const quiet: Logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

function recording(): { logger: Logger; warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  const logger: Logger = {
    ...quiet,
    warn: (obj: unknown) => warnings.push(obj as Record<string, unknown>),
    child: () => logger,
  };
  return { logger, warnings };
}

describe('light client: the follow loop', () => {
  it('roots on genesis, follows, refuses a forged tip without advancing, and backfills', async () => {
    const blocks = chain(40, () => four);
    let tip = 5;
    let forgedTip: LightBlock | undefined;
    const reports: string[] = [];
    const provider: LightProvider = {
      sources: () => ['honest', 'liar'],
      fetch: async (source, h) => {
        const height = h === 'latest' ? tip : h;
        if (source === 'liar' && h === 'latest' && forgedTip) return { block: forgedTip };
        if (height > tip) throw new Error(`height ${height} not available`);
        return { block: blocks[height - 1]!, nextValidators: four.validators };
      },
      report: (source, reason) => reports.push(`${source}: ${reason}`),
    };
    const store = await LightStore.open(new MemoryKV());
    const { logger, warnings } = recording();
    const client = new LightClient({
      chainId: CHAIN_ID,
      store,
      root: { kind: 'genesis', initialHeight: 1, time: GENESIS_TIME + S, validators: four.validators },
      trustingPeriodNs: 168n * HOUR,
      maxClockDriftNs: 10n * S,
      now: () => GENESIS_TIME + 100n * S,
      verify: ed25519Verify,
      logger,
    });

    let r = await client.round(provider);
    assert.equal(r.advancedTo, 5);
    assert.equal(store.latest, 5);
    assert.equal(store.base, 1);
    assert.equal(r.backfilled, 3, 'heights 2..4 filled below 5');
    assert.ok(await store.signedHeader(3));
    assert.equal((await store.validators(6))?.length, 4, 'the next set is kept for /validators');

    // The liar serves a header 20 heights ahead whose commit it forged.
    tip = 8;
    forgedTip = structuredClone(blocks[27]!);
    forgedTip.header.appHash = new Uint8Array(32).fill(7);
    forgedTip.commit.blockId = { ...forgedTip.commit.blockId, hash: headerHash(forgedTip.header) };
    r = await client.round(provider);
    assert.equal(r.advancedTo, 8, 'the honest tip is taken');
    assert.equal(store.latest, 8);
    assert.equal(r.refused.length, 1);
    assert.equal(r.refused[0]!.source, 'liar');
    assert.equal(r.refused[0]!.code, 'FORGED_SIGNATURE');
    assert.ok(warnings.some((w) => w.code === 'FORGED_SIGNATURE' && w.peer === 'liar'));
    assert.equal(reports.length, 1);
    assert.match(reports[0]!, /^liar: light block at height 28 refused/);
    assert.equal(await store.signedHeader(28), undefined);

    // Only the liar answers: nothing moves.
    provider.sources = () => ['liar'];
    r = await client.round(provider);
    assert.equal(r.advancedTo, undefined);
    assert.equal(store.latest, 8);

    // A reopened store resumes from what was verified.
    const again = await LightStore.open((store as unknown as { kv: MemoryKV }).kv);
    assert.equal(again.latest, 8);
    assert.equal(again.latestBlock()!.header.height, 8);
  });

  it('refuses a first block that the genesis validators did not sign', async () => {
    const impostors = setOf(KEYS.slice(4, 8));
    const fake = lightBlock({ height: 1, vals: impostors, time: GENESIS_TIME + S });
    const store = await LightStore.open(new MemoryKV());
    const client = new LightClient({
      chainId: CHAIN_ID,
      store,
      root: { kind: 'genesis', initialHeight: 1, time: GENESIS_TIME + S, validators: four.validators },
      trustingPeriodNs: 168n * HOUR,
      maxClockDriftNs: 10n * S,
      now: () => GENESIS_TIME + 100n * S,
      verify: ed25519Verify,
      logger: quiet,
    });
    const r = await client.round({ sources: () => ['p'], fetch: async () => ({ block: fake }) });
    assert.equal(r.refused[0]?.code, 'VALIDATORS_HASH');
    assert.equal(store.latest, 0);
    assert.match(client.rootStatus ?? '', /refused/);
  });
});
