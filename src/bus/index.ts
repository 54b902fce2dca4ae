export { RedisBus, type MessageBus } from './message-bus.js';
