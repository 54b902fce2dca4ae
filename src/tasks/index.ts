export { TaskBridge, type TaskBridgeOptions, type TaskOrigin } from './bridge.js';
export { MemoryTaskStore, RedisTaskStore, type TaskStore } from './store.js';
