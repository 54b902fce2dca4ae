// translate/: the legacy face Causeway serves itself in front of a modern (2026-07-28) upstream: the face
// (face.ts), its sessions in the store (sessions.ts), the asks of a round
// and their answers across replicas (rounds.ts), and the wire shapes of the two eras (wire.ts).

export { TranslatedFace, type TranslatedFaceOptions } from './face.js';
export { AskRounds } from './rounds.js';
export { MemoryFacts, RedisFacts, type FactsStore } from './sessions.js';
