// Tagged JSON (libs/consensus/src/codec/json.ts) is written by plain JSON.stringify over a tagged
// copy rather than through JSON.stringify with a replacer; the text must stay byte for byte what the replacer wrote, since
// stores written before hold it and readers compare it. The reference below is the rule as
// docs and the stores define it: bigint -> {"$n": decimal}, bytes -> {"$b": base64}, Map -> {"$m": entries}.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockIdOf, decodeTagged, encodeTagged, makeBlock } from '@noded/consensus';
import { TaggedJsonText, toTaggedJson, toTaggedJsonSpliced } from '@noded/consensus/src/codec/json.js';
import { genesis, prng, testKey } from './helpers.js';

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (typeof original === 'bigint') return { $n: original.toString() };
  if (original instanceof Uint8Array)
    return { $b: Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') };
  if (original instanceof Map) return { $m: [...original.entries()] };
  return value;
}

const reference = (v: unknown) => JSON.stringify(v, replacer);
const text = (v: unknown) => new TextDecoder().decode(encodeTagged(v));

function randomValue(r: () => number, depth: number): unknown {
  const pick = Math.floor(r() * (depth > 3 ? 9 : 12));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return undefined;
    case 2:
      return r() < 0.5;
    case 3:
      return [0, -0, 1.5, -7, 1e21, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY][Math.floor(r() * 8)];
    case 4:
      return BigInt(Math.floor(r() * 1e9)) * (r() < 0.5 ? -1n : 1n) * 10n ** BigInt(Math.floor(r() * 30));
    case 5:
      return ['', 'a"b\\c', 'line\nbreak', '\u2028\u0000é', 'chain-local'][Math.floor(r() * 5)];
    case 6: {
      const b = new Uint8Array(Math.floor(r() * 40));
      for (let i = 0; i < b.length; i++) b[i] = Math.floor(r() * 256);
      // Some views start inside a larger buffer, as decoded protobuf fields do.
      return r() < 0.3 ? b.subarray(Math.min(3, b.length)) : b;
    }
    case 7:
      return Buffer.from([1, 2, 3]);
    case 8:
      return () => 1;
    case 9:
    case 10: {
      const o: Record<string, unknown> = {};
      const n = Math.floor(r() * 5);
      for (let i = 0; i < n; i++)
        o[['a', 'height', '2', '$b', 'x y'][Math.floor(r() * 5)]!] = randomValue(r, depth + 1);
      return o;
    }
    default:
      return r() < 0.8
        ? Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1))
        : new Map([[String(r()), randomValue(r, depth + 1)]]);
  }
}

describe('tagged JSON', () => {
  it('writes the same text as JSON.stringify with the replacer for the records the stores keep', () => {
    const keys = [testKey(0), testKey(1), testKey(2), testKey(3)];
    const chain = genesis(keys);
    const block = makeBlock(chain, {
      height: 1,
      time: chain.lastBlockTime + 1_000_000n,
      txs: [new Uint8Array([1, 2, 3])],
      evidence: [],
      lastCommit: null,
      proposerAddress: chain.validators.validators[0]!.address,
    });
    const meta = { blockId: blockIdOf(block), blockSize: 700, header: block.header, numTxs: 1 };
    const validators = {
      validators: chain.validators.validators,
      proposer: chain.validators.proposerAddress,
    };
    const state = { ...chain, validators, nextValidators: validators, lastValidators: validators };
    for (const [what, v] of Object.entries({ meta, validators, state, params: chain.consensusParams })) {
      assert.equal(text(v), reference(v), what);
    }
    const back = decodeTagged<typeof meta>(encodeTagged(meta));
    assert.deepEqual(back.header.time, block.header.time);
    assert.deepEqual(back.blockId.hash, meta.blockId.hash);
  });

  it('writes the same text for 5,000 random values, and falls back for toJSON and boxed values', () => {
    const r = prng(21);
    for (let i = 0; i < 5000; i++) {
      const v = randomValue(r, 0);
      assert.equal(text(v), reference(v) ?? '', `value ${i} of seed 21`);
    }
    // Objects with toJSON (a Date, one returning a bigint) and boxed primitives take the fallback.
    const odd = {
      when: new Date(0),
      boxed: [Object(1), Object('s'), Object(true)],
      custom: { toJSON: () => ({ n: 5n }) },
    };
    assert.equal(text(odd), reference(odd));
    assert.match(text(odd), /"custom":\{"n":\{"\$n":"5"\}\}/);
  });

  it('keeps an own "__proto__" key (as JSON.parse makes one) a key, with its value tagged', () => {
    const o = JSON.parse('{"a":1,"__proto__":{"x":[1,2]},"z":null}') as Record<string, unknown>;
    o.n = 7n;
    // The own property, not the accessor: JSON.parse defines it as data.
    (Object.getOwnPropertyDescriptor(o, '__proto__')?.value as Record<string, unknown>).b = Uint8Array.of(
      1,
      2,
    );
    assert.equal(text(o), reference(o));
    assert.equal(text(o), '{"a":1,"__proto__":{"x":[1,2],"b":{"$b":"AQI="}},"z":null,"n":{"$n":"7"}}');
  });

  it("writes a block's transaction results as the replacer did (the records written at every block)", () => {
    const attr = (key: string, value: string) => ({ key, value, index: true });
    const result = (i: number) => ({
      code: i % 7 === 0 ? 30 : 0,
      data: i % 5 === 0 ? Uint8Array.of(i, 0, 255) : new Uint8Array(0),
      log: i % 7 === 0 ? 'execution reverted: "quoted"\n' : '',
      info: '',
      gasWanted: 21_000n + BigInt(i),
      gasUsed: 21_000n,
      events: [
        {
          type: 'ethereum_tx',
          attributes: [
            attr('amount', String(10n ** 18n)),
            attr('txIndex', String(i)),
            attr('txHash', 'AB'.repeat(32)),
          ],
        },
        { type: 'message', attributes: [attr('sender', `0x${'34'.repeat(20)}`), attr('module', 'evm')] },
      ],
      codespace: i % 7 === 0 ? 'evm' : '',
    });
    const res = {
      events: [],
      txResults: Array.from({ length: 50 }, (_, i) => result(i)),
      validatorUpdates: [{ pubKey: Uint8Array.of(9, 9), power: 10n }],
      consensusParamUpdates: null,
      appHash: new Uint8Array(32).fill(7),
    };
    assert.equal(text(res), reference(res));
    assert.deepEqual(decodeTagged<typeof res>(encodeTagged(res)), res);
  });

  it('writes texts encoded before (TaggedJsonText) as they are, through either entry point', () => {
    const set = { validators: [{ power: 10n, pubKey: Uint8Array.of(1, 2) }], proposer: null };
    const setText = toTaggedJson(set);
    const state = {
      height: 7n,
      chainId: 'c',
      appHash: Uint8Array.of(3),
      nested: [{ s: new TaggedJsonText(setText) }],
    };
    const plain = { height: 7n, chainId: 'c', appHash: Uint8Array.of(3), nested: [{ s: set }] };
    // The same text as the value with the set in place, whichever way it is written.
    assert.equal(toTaggedJson(state), toTaggedJson(plain));
    assert.equal(toTaggedJsonSpliced(state), toTaggedJson(plain));
    assert.equal(toTaggedJsonSpliced(plain), toTaggedJson(plain));
    assert.deepEqual(decodeTagged(encodeTagged(state)), decodeTagged(encodeTagged(plain)));
    // A value the fast paths leave to the replacer (a toJSON) still splices the text.
    const withToJson = { ...state, when: { toJSON: () => 'then' } };
    assert.equal(toTaggedJson(withToJson), toTaggedJson({ ...plain, when: 'then' }));
  });
});
