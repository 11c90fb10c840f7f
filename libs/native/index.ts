export {
  evictBlockCache,
  flushMemtables,
  type MallocInfo,
  mallocInfo,
  mallocTrim,
  type NativeStatus,
  nativeKeccak256,
  nativeSha256,
  nativeStatus,
} from './src/native.js';
