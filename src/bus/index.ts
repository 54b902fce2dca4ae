export { readMessage, RedisBus, type MessageBus } from './message-bus.js';
export { ioredis } from './ioredis.js';
export { FORGET_MS, ReplicaLiveness, type LivenessListener, type LivenessOptions } from './liveness.js';
export {
  COMPARE_AND_DELETE,
  createRedisClient,
  describeConnection,
  parseHostPort,
  readCa,
  type RedisClient,
  type RedisConnectionOptions,
} from './redis-connection.js';
