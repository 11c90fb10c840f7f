import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ed25519Address,
  ed25519Generate,
  ed25519Sign,
  ed25519Verify,
  ethAddressFromPrivateKey,
  ethAddressFromPublicKey,
  keccak256,
  nodeIdFromPublicKey,
  secp256k1Recover,
  secp256k1Sign,
  sha256,
} from '@noded/crypto';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('crypto', () => {
  it('keccak256 and sha256 match the known empty-input digests', () => {
    assert.equal(
      hex(keccak256(new Uint8Array())),
      'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
    );
    assert.equal(
      hex(sha256(new Uint8Array())),
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  it('ed25519 signs and verifies; a changed message or key fails', () => {
    const kp = ed25519Generate();
    const msg = new TextEncoder().encode('vote');
    const sig = ed25519Sign(kp.seed, msg);
    assert.equal(sig.length, 64);
    assert.ok(ed25519Verify(kp.publicKey, msg, sig));
    assert.ok(!ed25519Verify(kp.publicKey, new TextEncoder().encode('vote!'), sig));
    assert.ok(!ed25519Verify(ed25519Generate().publicKey, msg, sig));
    assert.ok(!ed25519Verify(kp.publicKey, msg, sig.subarray(1)));
  });

  it('node id is the hex of the first 20 bytes of sha256(pubkey)', () => {
    const kp = ed25519Generate(new Uint8Array(32).fill(7));
    assert.equal(nodeIdFromPublicKey(kp.publicKey), hex(sha256(kp.publicKey).subarray(0, 20)));
    assert.equal(ed25519Address(kp.publicKey).length, 20);
  });

  it('derives the Hardhat account #0 address and recovers a signer', () => {
    const pk = Buffer.from('ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', 'hex');
    assert.equal(hex(ethAddressFromPrivateKey(pk)), 'f39fd6e51aad88f6f4ce6ab8827279cfffb92266');
    const digest = keccak256(new TextEncoder().encode('tx'));
    const { signature, recovery } = secp256k1Sign(digest, pk);
    assert.equal(
      hex(ethAddressFromPublicKey(secp256k1Recover(digest, signature, recovery))),
      'f39fd6e51aad88f6f4ce6ab8827279cfffb92266',
    );
  });
});
