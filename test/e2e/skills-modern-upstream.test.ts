// A modern upstream that serves skills of its own (the SDK's SkillsExtension), behind Causeway
// with a skills folder: the 2026 client's SkillsClient sees both, the folder's skill winning the
// name both have, and reads each from where it lives, every file verified against its entry.

import t from 'tap';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { startModernServer } from '../fixtures/modern-server.js';
import { startCauseway } from '../helpers/causeway.js';

const dir = await mkdtemp(join(tmpdir(), 'causeway-skills-modern-'));
const FOLDER_GIT = "---\nname: git-workflow\ndescription: The folder's Git conventions\n---\nFrom the folder.\n";
await mkdir(join(dir, 'git-workflow'));
await writeFile(join(dir, 'git-workflow/SKILL.md'), FOLDER_GIT);

const upstream = await startModernServer({
  skills: {
    'git-workflow/SKILL.md':
      "---\nname: git-workflow\ndescription: The server's Git conventions\n---\nFrom the server.\n",
    'server-own/SKILL.md':
      '---\nname: server-own\ndescription: A skill the server ships itself\n---\nFrom the server too.\n',
    'server-own/notes.md': 'notes\n',
  },
});
const causeway = await startCauseway({ 'upstream.url': upstream.url, 'upstream.era': 'modern', 'skills.dir': dir });
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
});

t.test('modern_client-to-modern_upstream-skills: merged, the folder wins a name', async (t) => {
  const client = new Client(
    { name: 'e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
  t.teardown(() => client.close());
  const skills = new SkillsClient(client);
  t.ok(skills.supported, 'the extension is declared');
  const { skills: list } = await skills.list();
  t.same(
    list.map((s) => s.uri),
    ['skill://git-workflow/SKILL.md', 'skill://server-own/SKILL.md'],
    "the folder's skill, then the server's other one",
  );
  t.equal(list[0]!.frontmatter.description, "The folder's Git conventions", 'the folder wins the name');
  t.equal((await skills.read(list[0]!)).text, FOLDER_GIT, "the folder's bytes, verified");
  const own = list[1]!;
  t.equal(
    (await skills.read(own, 'notes.md')).text,
    'notes\n',
    "the server's own file, read from the server and verified",
  );
  t.same(
    (await skills.get('skill://server-own/SKILL.md')).skill,
    own,
    'skills/get of the server skill goes to the server',
  );
  t.ok((await client.listTools()).tools.length > 0, "the server's tools");
  t.match(
    causeway.logs.filter((l) => l.includes('left out')).join('\n'),
    'git-workflow',
    'the shadowed skill is logged',
  );
});
