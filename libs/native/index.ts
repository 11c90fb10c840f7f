export {
  evictBlockCache,
  flushMemtables,
  type MallocInfo,
  mallocInfo,
  mallocTrim,
  type NativeStatus,
  nativeKeccak256,
  nativeStatus,
} from './src/native.js';
