// @noded/native: calls Node cannot make by itself, for giving memory back when the node is quiet
// and, for glibc's heaps, while it is busy (docs/reliability.md, "Bounded memory").
//
// mallocTrim(): glibc's malloc_trim(0). Frees the unused pages inside malloc's heaps (not only at
//   their top, which MALLOC_TRIM_THRESHOLD_ already covers): what a load's freed native buffers left.
//
// mallocInfo(): glibc's mallinfo2(), summed over the arenas: what malloc's heaps hold and how much
//   of it is free, so that mallocTrim can be asked only when there is something to give back.
//
// flushMemtables(handle, location): RocksDB's DB::Flush for the default column family of a database
//   opened by @nxtedition/rocksdb, which has no flush of its own. `handle` is the binding's public
//   `RocksLevel#handle` (the address of its `Database`); `location` must be the path that database
//   was opened at, and is compared with the one the `Database` holds before anything else is read, so
//   a layout this file does not know is refused instead of followed. The flush is only scheduled
//   (FlushOptions::wait = false): RocksDB's background thread writes the memtables to an SST file and
//   frees them; reads and writes go on meanwhile, and this thread never waits on RocksDB.
//
// evictBlockCache(handle, location): drops the blocks no reader holds from the database's block cache
//   (index and filter blocks too: the node keeps them in the cache). The cache is reached through the
//   default column family's options, DB::GetOptions -> table_factory -> BlockBasedTableOptions::
//   block_cache, and emptied with Cache::EraseUnRefEntries; its blocks are malloc'd, so malloc_trim can
//   then give their pages back. Returns the cache's usage before and after, bytes.
//
// keccak256(data, out): Ethereum's Keccak-256 (FIPS 202's Keccak[c=512] with the original 0x01 padding)
//   of a Uint8Array, written into a 32-byte Uint8Array the caller made, in one call. The `keccak` package's binding takes
//   four calls and a Buffer per digest (initialize, absorb, pad, squeeze), which cost several times the
//   permutation on the 20- to 200-byte inputs of addresses, trie nodes and transactions. The round
//   constants and rotation offsets are computed at load from the specification's definitions (the
//   rc LFSR, the (t+1)(t+2)/2 offsets along the pi walk) rather than written out.
//
// sha256(data, out): FIPS 180-4's SHA-256 of a Uint8Array into a 32-byte Uint8Array the caller made, in
//   one call: CometBFT's hash of every transaction, Merkle leaf and inner node. node:crypto's one-shot
//   hash() returns a new Buffer through OpenSSL's EVP layer: 2.5-3.5 us a digest of 33-110 bytes on a
//   loaded 2-core machine, against 1.6-2.2 for this call. The round constants and the initial
//   hash value are computed at compile time from their definitions (the first 32 bits of the fractional
//   parts of the cube roots of the first 64 primes, and of the square roots of the first 8).
//
// No RocksDB symbol is linked: DB::DefaultColumnFamily, DB::Flush, DB::GetOptions,
// Configurable::GetOptionsPtr, Cache::GetUsage and Cache::EraseUnRefEntries are virtual, called through the
// object's own table; everything else used from the headers is inline. The headers are the installed
// @nxtedition/rocksdb's own (scripts/build-native.mjs), and index.ts refuses the flush when the
// installed package is not the version this file was compiled against.
#include <malloc.h>
#include <node_api.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "rocksdb/db.h"
#include "rocksdb/advanced_cache.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"

namespace {

// The leading members of @nxtedition/rocksdb's `struct Database` (binding.cc): a std::string and a
// std::unique_ptr<rocksdb::DB> (one pointer with the default deleter). Never constructed or
// destroyed here, only read.
struct DatabaseHead {
  const std::string location;
  rocksdb::DB* db;
};

napi_value Throw(napi_env env, const std::string& message) {
  napi_throw_error(env, nullptr, message.c_str());
  return nullptr;
}

// {heap, free}: glibc's mallinfo2() over every arena: the bytes malloc's heaps hold from the system
// (`arena`, not counting blocks mmap'd on their own) and of them the bytes free (`fordblks`), which
// only malloc_trim gives back when they sit between live blocks.
napi_value MallocInfo(napi_env env, napi_callback_info) {
  const struct mallinfo2 m = mallinfo2();
  napi_value result;
  napi_value value;
  napi_create_object(env, &result);
  napi_create_double(env, static_cast<double>(m.arena), &value);
  napi_set_named_property(env, result, "heap", value);
  napi_create_double(env, static_cast<double>(m.fordblks), &value);
  napi_set_named_property(env, result, "free", value);
  return result;
}

napi_value MallocTrim(napi_env env, napi_callback_info) {
  const int released = malloc_trim(0);
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

// The database behind (handle, location), or nullptr with a JavaScript error thrown naming what is
// wrong. `name` is the calling function's, for the messages.
rocksdb::DB* OpenDatabase(napi_env env, napi_callback_info info, const char* name) {
  size_t argc = 2;
  napi_value argv[2];
  const std::string fn(name);
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 2) {
    Throw(env, fn + "(handle, location): two arguments expected");
    return nullptr;
  }

  int64_t address = 0;
  bool lossless = false;
  if (napi_get_value_bigint_int64(env, argv[0], &address, &lossless) != napi_ok || !lossless ||
      address == 0) {
    Throw(env, fn + ": handle must be the database's non-zero bigint handle");
    return nullptr;
  }

  size_t length = 0;
  if (napi_get_value_string_utf8(env, argv[1], nullptr, 0, &length) != napi_ok) {
    Throw(env, fn + ": location must be a string");
    return nullptr;
  }
  std::string location(length, '\0');
  napi_get_value_string_utf8(env, argv[1], location.data(), length + 1, &length);

  const auto* head = reinterpret_cast<const DatabaseHead*>(static_cast<intptr_t>(address));
  // A std::string's size and characters are checked before its contents are compared, so a handle
  // of another layout (a different binding version) is refused without reading past its bounds.
  if (head->location.size() != location.size() || head->location != location) {
    Throw(env, fn + ": the handle's database is not at " + location +
                   " (unknown @nxtedition/rocksdb layout?)");
    return nullptr;
  }
  if (head->db == nullptr) {
    Throw(env, fn + ": database at " + location + " is not open");
    return nullptr;
  }
  return head->db;
}

napi_value FlushMemtables(napi_env env, napi_callback_info info) {
  rocksdb::DB* db = OpenDatabase(env, info, "flushMemtables");
  if (db == nullptr) return nullptr;

  // allow_write_stall: without it RocksDB first waits, on this (the JavaScript) thread, until one more
  // table file would not slow writes down: after a long load, with compactions behind, that is a
  // blocked event loop. A quiet database's writes are few, so a short stall costs nothing.
  rocksdb::FlushOptions options;
  options.wait = false;
  options.allow_write_stall = true;
  const rocksdb::Status status = db->Flush(options, db->DefaultColumnFamily());
  if (!status.ok()) {
    const char* state = status.getState();
    return Throw(env, std::string("flushMemtables: RocksDB refused the flush (code ") +
                          std::to_string(static_cast<int>(status.code())) + ")" +
                          (state != nullptr ? std::string(": ") + state : std::string()));
  }
  return nullptr;
}

napi_value EvictBlockCache(napi_env env, napi_callback_info info) {
  rocksdb::DB* db = OpenDatabase(env, info, "evictBlockCache");
  if (db == nullptr) return nullptr;
  // A copy of the column family's options: it shares the table factory, and so the cache, with the
  // database (shared_ptr), which keeps both alive while this runs even if the database closes.
  const rocksdb::Options options = db->GetOptions(db->DefaultColumnFamily());
  const auto* table = options.table_factory == nullptr
                          ? nullptr
                          : options.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  if (table == nullptr) return Throw(env, "evictBlockCache: the database has no block-based table factory");
  napi_value result;
  napi_create_object(env, &result);
  double before = 0;
  double after = 0;
  if (table->block_cache != nullptr) {
    before = static_cast<double>(table->block_cache->GetUsage());
    table->block_cache->EraseUnRefEntries();
    after = static_cast<double>(table->block_cache->GetUsage());
  }
  napi_value value;
  napi_create_double(env, before, &value);
  napi_set_named_property(env, result, "before", value);
  napi_create_double(env, after, &value);
  napi_set_named_property(env, result, "after", value);
  return result;
}


// ---- Keccak-256 ----------------------------------------------------------------------------------

struct KeccakTables {
  uint64_t rc[24];
  int rho[25];  // rotation of lane x + 5y
  int pi[25];   // where lane x + 5y goes: y + 5 * ((2x + 3y) mod 5)
  constexpr KeccakTables() : rc(), rho(), pi() {
    // rc(t): the LFSR x^8 + x^6 + x^5 + x^4 + 1 of FIPS 202 (Algorithm 5); bit k of r is R[k].
    auto rcBit = [](int t) {
      t %= 255;
      unsigned r = 1;
      for (int i = 1; i <= t; i++) {
        r <<= 1;
        if (r & 0x100) r ^= 0x171;  // R[0], R[4], R[5], R[6] ^= R[8]; R truncated to 8 bits
      }
      return static_cast<uint64_t>(r & 1);
    };
    for (int ir = 0; ir < 24; ir++) {
      uint64_t c = 0;
      for (int j = 0; j <= 6; j++) c |= rcBit(j + 7 * ir) << ((1 << j) - 1);
      rc[ir] = c;
    }
    rho[0] = 0;
    int x = 1, y = 0;
    for (int t = 0; t < 24; t++) {
      rho[x + 5 * y] = ((t + 1) * (t + 2) / 2) % 64;
      int nx = y, ny = (2 * x + 3 * y) % 5;
      x = nx;
      y = ny;
    }
    for (int x2 = 0; x2 < 5; x2++)
      for (int y2 = 0; y2 < 5; y2++) pi[x2 + 5 * y2] = y2 + 5 * ((2 * x2 + 3 * y2) % 5);
  }
};

// Computed at compile time, so the unrolled rho and pi below rotate by constants.
constexpr KeccakTables kKeccak;

// Branch-free for n = 0 too (rho[0] is 0).
inline uint64_t Rotl(uint64_t v, int n) { return (v << n) | (v >> ((64 - n) & 63)); }

void KeccakF1600(uint64_t a[25]) {
  uint64_t b[25];
  for (int round = 0; round < 24; round++) {
    // theta
    const uint64_t c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20];
    const uint64_t c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
    const uint64_t c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22];
    const uint64_t c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
    const uint64_t c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
    const uint64_t d0 = c4 ^ Rotl(c1, 1), d1 = c0 ^ Rotl(c2, 1), d2 = c1 ^ Rotl(c3, 1);
    const uint64_t d3 = c2 ^ Rotl(c4, 1), d4 = c3 ^ Rotl(c0, 1);
    for (int y = 0; y < 25; y += 5) {
      a[y] ^= d0;
      a[y + 1] ^= d1;
      a[y + 2] ^= d2;
      a[y + 3] ^= d3;
      a[y + 4] ^= d4;
    }
    // rho and pi
#pragma GCC unroll 25
    for (int i = 0; i < 25; i++) b[kKeccak.pi[i]] = Rotl(a[i], kKeccak.rho[i]);
    // chi
    for (int y = 0; y < 25; y += 5) {
      const uint64_t b0 = b[y], b1 = b[y + 1], b2 = b[y + 2], b3 = b[y + 3], b4 = b[y + 4];
      a[y] = b0 ^ (~b1 & b2);
      a[y + 1] = b1 ^ (~b2 & b3);
      a[y + 2] = b2 ^ (~b3 & b4);
      a[y + 3] = b3 ^ (~b4 & b0);
      a[y + 4] = b4 ^ (~b0 & b1);
    }
    // iota
    a[0] ^= kKeccak.rc[round];
  }
}

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

constexpr size_t kKeccak256Rate = 136;

void Keccak256(const uint8_t* in, size_t len, uint8_t out[32]) {
  uint64_t a[25] = {0};
  while (len >= kKeccak256Rate) {
    for (size_t i = 0; i < kKeccak256Rate / 8; i++) a[i] ^= Load64(in + 8 * i);
    KeccakF1600(a);
    in += kKeccak256Rate;
    len -= kKeccak256Rate;
  }
  uint8_t last[kKeccak256Rate] = {0};
  if (len > 0) std::memcpy(last, in, len);
  last[len] ^= 0x01;
  last[kKeccak256Rate - 1] ^= 0x80;
  for (size_t i = 0; i < kKeccak256Rate / 8; i++) a[i] ^= Load64(last + 8 * i);
  KeccakF1600(a);
  for (int i = 0; i < 32; i++) out[i] = static_cast<uint8_t>(a[i / 8] >> (8 * (i % 8)));
}

// ---- SHA-256 ------------------------------------------------------------------------------------

constexpr bool IsPrime(uint32_t n) {
  if (n < 2) return false;
  for (uint32_t d = 2; d * d <= n; d++)
    if (n % d == 0) return false;
  return true;
}

// The largest x below 2^40 with x^k <= n (k = 2 or 3; x^3 < 2^120 fits).
constexpr uint64_t IntegerRoot(unsigned __int128 n, int k) {
  uint64_t lo = 0;
  uint64_t hi = uint64_t{1} << 40;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    unsigned __int128 power = 1;
    for (int i = 0; i < k; i++) power *= mid;
    if (power <= n) lo = mid;
    else hi = mid;
  }
  return lo;
}

struct Sha256Tables {
  uint32_t k[64];
  uint32_t h0[8];
  // frac(root(p)) * 2^32 = root(p * 2^(32 * degree)) mod 2^32: the integer root of p shifted left,
  // truncated to its low 32 bits.
  constexpr Sha256Tables() : k(), h0() {
    uint32_t p = 2;
    for (int i = 0; i < 64; i++, p++) {
      while (!IsPrime(p)) p++;
      k[i] = static_cast<uint32_t>(IntegerRoot(static_cast<unsigned __int128>(p) << 96, 3));
      if (i < 8) h0[i] = static_cast<uint32_t>(IntegerRoot(static_cast<unsigned __int128>(p) << 64, 2));
    }
  }
};

constexpr Sha256Tables kSha256;
static_assert(kSha256.k[0] == 0x428a2f98u && kSha256.k[63] == 0xc67178f2u, "SHA-256 round constants");
static_assert(kSha256.h0[0] == 0x6a09e667u && kSha256.h0[7] == 0x5be0cd19u, "SHA-256 initial hash value");

inline uint32_t Rotr(uint32_t v, int n) { return (v >> n) | (v << (32 - n)); }

inline uint32_t Load32Be(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void Sha256Block(uint32_t h[8], const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++) w[t] = Load32Be(block + 4 * t);
  for (int t = 16; t < 64; t++) {
    const uint32_t s0 = Rotr(w[t - 15], 7) ^ Rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = Rotr(w[t - 2], 17) ^ Rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    const uint32_t t1 = hh + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kSha256.k[t] + w[t];
    const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

void Sha256(const uint8_t* in, size_t len, uint8_t out[32]) {
  uint32_t h[8];
  for (int i = 0; i < 8; i++) h[i] = kSha256.h0[i];
  const size_t full = len - len % 64;
  for (size_t i = 0; i < full; i += 64) Sha256Block(h, in + i);
  // The rest, the 0x80 byte, zeros and the length in bits (big-endian) fill one block or spill into two.
  uint8_t last[128] = {0};
  const size_t rest = len - full;
  if (rest > 0) std::memcpy(last, in + full, rest);
  last[rest] = 0x80;
  const size_t blocks = rest + 1 + 8 <= 64 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(len) * 8;
  for (int i = 0; i < 8; i++) last[blocks * 64 - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  Sha256Block(h, last);
  if (blocks == 2) Sha256Block(h, last + 64);
  for (int i = 0; i < 32; i++) out[i] = static_cast<uint8_t>(h[i / 4] >> (24 - 8 * (i % 4)));
}

// ---- the digests' calls ---------------------------------------------------------------------------

using DigestFn = void (*)(const uint8_t*, size_t, uint8_t[32]);

// name(data, out): writes the digest of `data` into `out` (both Uint8Array, out of 32 bytes).
// The caller allocates `out`: an ArrayBuffer made through N-API costs more than the digest.
napi_value DigestCall(napi_env env, napi_callback_info info, const char* name, DigestFn digest) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 2) {
    return Throw(env, std::string(name) + "(data, out): two Uint8Arrays expected");
  }
  napi_typedarray_type type;
  napi_typedarray_type outType;
  size_t length;
  size_t outLength;
  void* data;
  void* outData;
  if (napi_get_typedarray_info(env, argv[0], &type, &length, &data, nullptr, nullptr) != napi_ok ||
      type != napi_uint8_array ||
      napi_get_typedarray_info(env, argv[1], &outType, &outLength, &outData, nullptr, nullptr) != napi_ok ||
      outType != napi_uint8_array || outLength != 32) {
    return Throw(env, std::string(name) + "(data, out): data must be a Uint8Array, out a Uint8Array of 32 bytes");
  }
  digest(static_cast<const uint8_t*>(data), length, static_cast<uint8_t*>(outData));
  return nullptr;
}

napi_value Keccak256Call(napi_env env, napi_callback_info info) {
  return DigestCall(env, info, "keccak256", Keccak256);
}

napi_value Sha256Call(napi_env env, napi_callback_info info) {
  return DigestCall(env, info, "sha256", Sha256);
}

}  // namespace

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"mallocTrim", nullptr, MallocTrim, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mallocInfo", nullptr, MallocInfo, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"flushMemtables", nullptr, FlushMemtables, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"evictBlockCache", nullptr, EvictBlockCache, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"keccak256", nullptr, Keccak256Call, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"sha256", nullptr, Sha256Call, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(properties) / sizeof(properties[0]), properties);
  return exports;
}
