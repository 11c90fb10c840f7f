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
// No RocksDB symbol is linked: DB::DefaultColumnFamily, DB::Flush, DB::GetOptions,
// Configurable::GetOptionsPtr, Cache::GetUsage and Cache::EraseUnRefEntries are virtual, called through the
// object's own table; everything else used from the headers is inline. The headers are the installed
// @nxtedition/rocksdb's own (scripts/build-native.mjs), and index.ts refuses the flush when the
// installed package is not the version this file was compiled against.
#include <malloc.h>
#include <node_api.h>

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

}  // namespace

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"mallocTrim", nullptr, MallocTrim, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mallocInfo", nullptr, MallocInfo, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"flushMemtables", nullptr, FlushMemtables, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"evictBlockCache", nullptr, EvictBlockCache, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(properties) / sizeof(properties[0]), properties);
  return exports;
}
