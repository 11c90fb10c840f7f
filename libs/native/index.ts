export {
  evictBlockCache,
  flushMemtables,
  mallocTrim,
  type NativeStatus,
  nativeKeccak256,
  nativeStatus,
} from './src/native.js';
