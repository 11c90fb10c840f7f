export {
  evictBlockCache,
  flushMemtables,
  mallocTrim,
  type NativeStatus,
  nativeStatus,
} from './src/native.js';
