export { RedisGrants } from './grants.js';
export { RedisBuckets, BUCKET_SCRIPT } from './buckets.js';
export { tag } from './hash-tag.js';
