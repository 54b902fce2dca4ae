export { readMessage, RedisBus, type MessageBus } from './message-bus.js';
