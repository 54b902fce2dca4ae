export { SkillFolder } from './folder.js';
export { SkillsFront, SKILLS_EXTENSION, type SkillsFrontOptions } from './front.js';
export { SkillsLegacyFace, type SkillsLegacyOptions } from './legacy-face.js';
