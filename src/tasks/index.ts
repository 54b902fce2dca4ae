export { TaskBridge, type TaskBridgeOptions } from './bridge.js';
export type { TaskOrigin } from './record.js';
export { MemoryTaskStore, RedisTaskStore, type TaskStore } from './store.js';
export {
  answerTask,
  holdsTasks,
  plainCall,
  refuseRequiredTask,
  taskPlan,
  upstreamTaskCreated,
  type LearnTools,
  type TaskDeps,
  type TaskPlan,
} from './policy.js';
