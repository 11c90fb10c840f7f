export {
  evictBlockCache,
  flushMemtables,
  type MallocInfo,
  mallocInfo,
  mallocTrim,
  type NativeStatus,
  nativeStatus,
} from './src/native.js';
