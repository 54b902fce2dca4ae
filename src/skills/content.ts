// What a skill file is as a resource: its metadata in resources/list and a directory read, and
// its contents in resources/read, as text when its media type is textual and its bytes are valid
// UTF-8 (so the text's UTF-8 bytes are exactly the ones the digest covers), else as a base64 blob.

import { extname } from 'node:path';
import type { JsonObject } from '../jsonrpc.js';
import { DIRECTORY_MIME_TYPE, type DirChild, type SkillEntry, type SkillFile } from './catalog.js';

const TYPES: Readonly<Record<string, string>> = {
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.css': 'text/css',
  '.py': 'text/x-python',
  '.sh': 'text/x-shellscript',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.json': 'application/json',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.xml': 'application/xml',
  '.toml': 'application/toml',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
};

export function mimeTypeOf(path: string): string {
  return TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

function textual(mimeType: string): boolean {
  return (
    mimeType.startsWith('text/') ||
    /^application\/(?:json|yaml|xml|toml)$/.test(mimeType) ||
    /\+(?:json|xml)$/.test(mimeType)
  );
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The one entry of a resources/read answer for `file`. */
export function contentsOf(file: SkillFile): JsonObject {
  const mimeType = mimeTypeOf(file.path);
  if (textual(mimeType)) {
    try {
      return { uri: file.uri, mimeType, text: utf8.decode(file.bytes) };
    } catch {
      // Not UTF-8 after all: the bytes go as they are.
    }
  }
  return { uri: file.uri, mimeType, blob: file.bytes.toString('base64') };
}

/** A skill file in resources/list: SKILL.md named and described by its frontmatter [SKILLS "Resource Metadata"]. */
export function resourceOf(file: SkillFile, skill: SkillEntry): JsonObject {
  const out: JsonObject = {
    uri: file.uri,
    name: file.path === 'SKILL.md' ? skill.name : `${skill.name}/${file.path}`,
    mimeType: mimeTypeOf(file.path),
    size: file.size,
  };
  if (file.path === 'SKILL.md' && typeof skill.frontmatter.description === 'string')
    out.description = skill.frontmatter.description;
  return out;
}

/** A direct child in resources/directory/read: a file's metadata, or a directory resource. */
export function childOf(child: DirChild): JsonObject {
  return { uri: child.uri, name: child.name, mimeType: child.directory ? DIRECTORY_MIME_TYPE : mimeTypeOf(child.name) };
}
