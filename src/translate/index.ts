// translate/: the legacy face Causeway serves itself in front of a modern (2026-07-28) upstream: the face
// (face.ts), its sessions in the store (sessions.ts), the asks of a round
// and their answers across replicas (rounds.ts), the 2025-11-25 tasks over the upstream's tasks
// extension (tasks.ts), the wire shapes of the two eras (wire.ts), and what every message it
// sends leaves out to be one a legacy server would send (clean.ts).

export { TranslatedFace, type TranslatedFaceOptions } from './face.js';
export { AskRounds } from './rounds.js';
export { MemoryFacts, RedisFacts, type FactsStore } from './sessions.js';
