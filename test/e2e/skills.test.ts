// Skills from a folder, through Causeway in front of the legacy fixture (which knows nothing of
// skills): the 2026 client's SkillsClient (@modelcontextprotocol/client 2.4.0) lists, gets and
// reads them, each file checked against its entry's size and digest, and here once more against
// a SHA-256 of the bytes read; traversal is refused; an edit on disk shows in the next entry
// without a restart; broken skills are named in the log and left out; the SDK 1.32.2 client
// reads SKILL.md as a plain resource; the upstream's tools and resources stay.

import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient, type Skill } from '@modelcontextprotocol/client/ext/skills';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyServer } from '../fixtures/legacy-server.js';
import { startCauseway } from '../helpers/causeway.js';
import { until } from '../helpers/until.js';

const base = await mkdtemp(join(tmpdir(), 'causeway-skills-'));
const dir = join(base, 'skills');
const files: Record<string, string | Buffer> = {
  'git-workflow/SKILL.md':
    "---\nname: git-workflow\ndescription: Follow the team's Git " +
    'conventions\nlicense: Apache-2.0\nmetadata:\n  version: "1.2"\n---\n\n# ' +
    'Git\n\nSee references/GUIDE.md and pick from templates/.\n',
  'git-workflow/references/GUIDE.md': '# Guide\n\nRebase, then merge. ✓\n',
  'git-workflow/scripts/check.py': 'print("ok")\n',
  'git-workflow/templates/Q&A notes.md': 'Questions & answers\n',
  'git-workflow/assets/logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00, 0xfe]),
  'pdf-tools/SKILL.md': '---\nname: pdf-tools\ndescription: Extract and fill PDF forms\n---\nUse it.\n',
  'pdf-tools/forms/nested/deep.txt': 'deep\n',
  // Broken: each is left out and named.
  'no-frontmatter/SKILL.md': '# no frontmatter here\n',
  'wrong-name/SKILL.md': '---\nname: other-name\ndescription: x\n---\n',
  '.hidden/SKILL.md': '---\nname: hidden\ndescription: x\n---\n',
};
for (let i = 0; i < 513; i++) files[`too-many/f${i}.txt`] = 'x';
files['too-many/SKILL.md'] = '---\nname: too-many\ndescription: x\n---\n';
for (const [path, content] of Object.entries(files)) {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), content);
}
// A symlink that leaves the folder is not followed.
await writeFile(join(base, 'outside.txt'), 'secret\n');
await symlink(join(base, 'outside.txt'), join(dir, 'git-workflow/leak.txt'));

const upstream = await startLegacyServer();
const causeway = await startCauseway({
  'upstream.url': upstream.url,
  'skills.prefix': 'acme',
  // A page of two: skills/list, resources/list and directory reads are walked over several pages.
  mounts: JSON.stringify({ '/mcp': { upstreams: ['default'], pageSize: 2, skills: dir } }),
});
t.teardown(async () => {
  await causeway.close();
  await upstream.close();
  await rm(base, { recursive: true, force: true });
});

const GIT = 'skill://acme/git-workflow/SKILL.md';
const sha256 = (bytes: Uint8Array) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

async function modernClient(): Promise<{ client: Client; skills: SkillsClient }> {
  const client = new Client(
    { name: 'e2e-skills', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(causeway.url)));
  t.teardown(() => client.close());
  return { client, skills: new SkillsClient(client) };
}

t.test(
  "modern_client-to-legacy_upstream-skills-discover: the extension beside the upstream's capabilities",
  async (t) => {
    const { client, skills } = await modernClient();
    const d = await client.discover();
    const caps = d.capabilities as Record<string, unknown>;
    t.same((caps.extensions as Record<string, unknown>)['io.modelcontextprotocol/skills'], { directoryRead: true });
    t.ok(caps.resources, 'resources declared');
    t.ok(caps.tools, "the upstream's tools stay");
    t.ok(skills.supported && skills.directoryRead, 'the SDK client sees the extension and directoryRead');
    const tools = await client.listTools();
    t.ok(
      tools.tools.some((x) => x.name === 'test_simple_text'),
      "the upstream's tools are still listed",
    );
  },
);

t.test(
  'modern_client-to-legacy_upstream-skills-list-get-read: every file read matches its digest and size',
  async (t) => {
    const { skills } = await modernClient();
    const listing = await skills.list();
    t.same(
      listing.skills.map((s) => s.uri),
      [GIT, 'skill://acme/pdf-tools/SKILL.md'],
      'the two good skills, over pages of two',
    );
    t.equal(listing.cacheScope, 'public');
    t.equal(typeof listing.ttlMs, 'number');
    const git = listing.skills[0]!;
    t.same(
      git.frontmatter,
      {
        name: 'git-workflow',
        description: "Follow the team's Git conventions",
        license: 'Apache-2.0',
        metadata: { version: '1.2' },
      },
      'frontmatter verbatim',
    );
    const resources = git.resources as Array<{ uri: string; digest: string; size: number }>;
    t.same(
      resources.map((r) => r.uri).sort(),
      [
        GIT,
        'skill://acme/git-workflow/assets/logo.png',
        'skill://acme/git-workflow/references/GUIDE.md',
        'skill://acme/git-workflow/scripts/check.py',
        'skill://acme/git-workflow/templates/Q&A%20notes.md',
      ],
      'every file, the symlink out of the folder left out',
    );
    let read = 0;
    for (const skill of listing.skills) {
      for (const r of skill.resources as Array<{ uri: string; digest: string; size: number }>) {
        const file = await skills.read(skill, r.uri);
        t.ok(file.verified, `${r.uri} verified by the SDK client`);
        t.equal(sha256(file.bytes), r.digest, `${r.uri}: digest of the bytes read`);
        t.equal(file.bytes.byteLength, r.size, `${r.uri}: size of the bytes read`);
        const path = r.uri.replace('skill://acme/', '').replace('%20', ' ');
        t.same(Buffer.from(file.bytes), Buffer.from(files[path]!), `${r.uri}: the bytes on disk`);
        read++;
      }
    }
    t.equal(read, 7);
    const png = await skills.read(git, 'assets/logo.png');
    t.equal(png.text, undefined, 'a binary file comes as a blob');
    t.equal(png.mimeType, 'image/png');
    const manifest = await skills.read(git);
    t.same(manifest.frontmatter, git.frontmatter, "SKILL.md's frontmatter equals the entry's");
    const got = await skills.get('skill://acme/pdf-tools/SKILL.md');
    t.same(got.skill, listing.skills[1], 'skills/get answers the same entry');
    t.equal(got.cacheScope, 'public');
    await t.rejects(skills.get('skill://acme/nope/SKILL.md'), { code: -32602 }, 'unknown skill: -32602');
    await t.rejects(
      skills.get('skill://acme/no-frontmatter/SKILL.md'),
      { code: -32602 },
      'a broken skill is not served',
    );
  },
);

t.test('modern_client-to-legacy_upstream-skills-directory', async (t) => {
  const { client, skills } = await modernClient();
  const root = await skills.readDirectory('skill://acme/git-workflow');
  t.same(
    root.resources.map((r) => [r.name, r.mimeType]),
    [
      ['SKILL.md', 'text/markdown'],
      ['assets', 'inode/directory'],
      ['references', 'inode/directory'],
      ['scripts', 'inode/directory'],
      ['templates', 'inode/directory'],
    ],
    'direct children over three pages, subfolders as directories',
  );
  const deep = await skills.readDirectory('skill://acme/pdf-tools/forms');
  t.same(
    deep.resources.map((r) => r.uri),
    ['skill://acme/pdf-tools/forms/nested'],
  );
  const top = await skills.readDirectory('skill://acme');
  t.same(
    top.resources.map((r) => r.uri),
    ['skill://acme/git-workflow', 'skill://acme/pdf-tools'],
    'the prefix level lists the skills',
  );
  await t.rejects(skills.readDirectory(GIT), { code: -32602 }, 'a file is not a directory');
  await t.rejects(skills.readDirectory('skill://acme/nope'), { code: -32602 }, 'no such directory');
  const all = await client.listResources();
  const uris = all.resources.map((r) => r.uri);
  t.ok(uris.includes('test://static-text'), "the upstream's own resources stay");
  t.ok(
    uris.includes(GIT) && uris.includes('skill://acme/pdf-tools/forms/nested/deep.txt'),
    'with every skill file after them',
  );
  t.equal(new Set(uris).size, uris.length, 'each once');
  const md = all.resources.find((r) => r.uri === GIT);
  t.same(
    { name: md?.name, description: md?.description, mimeType: md?.mimeType },
    { name: 'git-workflow', description: "Follow the team's Git conventions", mimeType: 'text/markdown' },
  );
});

t.test('modern_client-to-legacy_upstream-skills-traversal: refused, never resolved', async (t) => {
  const { client, skills } = await modernClient();
  for (const uri of [
    'skill://acme/git-workflow/../pdf-tools/SKILL.md',
    'skill://acme/git-workflow/%2e%2e/pdf-tools/SKILL.md',
    'skill://acme/git-workflow/references%2F..%2F..%2Fpdf-tools/SKILL.md',
    'skill://acme/git-workflow/..%5c..%5coutside.txt',
    'skill://acme/git-workflow/./SKILL.md',
    'skill://acme/git-workflow/leak.txt',
    'skill://acme/.hidden/SKILL.md',
  ]) {
    await t.rejects(client.readResource({ uri }), { code: -32602 }, `resources/read ${uri}`);
  }
  await t.rejects(
    skills.get('skill://acme/git-workflow/../pdf-tools/SKILL.md'),
    { code: -32602 },
    'skills/get with ..',
  );
  await t.rejects(skills.readDirectory('skill://acme/git-workflow/..'), { code: -32602 }, 'directory read with ..');
  const ok = await client.readResource({ uri: 'skill://acme/git-workflow/templates/Q%26A%20notes.md' });
  t.equal(
    (ok.contents[0] as { text?: string }).text,
    'Questions & answers\n',
    'another spelling of the same name is the same file',
  );
});

t.test('modern_client-to-legacy_upstream-skills-edited: a new digest without a restart', async (t) => {
  const { skills } = await modernClient();
  const guide = 'skill://acme/git-workflow/references/GUIDE.md';
  const before = (await skills.get(GIT)).skill;
  const text = '# Guide\n\nSquash, then merge.\n';
  await writeFile(join(dir, 'git-workflow/references/GUIDE.md'), text);
  const after = await until(
    async () => {
      const { skill } = await skills.get(GIT);
      const entry = (skill.resources as Array<{ uri: string; digest: string }>).find((r) => r.uri === guide);
      return entry?.digest === sha256(Buffer.from(text)) ? skill : undefined;
    },
    { what: 'the edited file in the entry' },
  );
  t.not(JSON.stringify(after.resources), JSON.stringify(before.resources), 'the entry changed');
  const file = await skills.read(after as Skill, 'references/GUIDE.md');
  t.equal(file.text, text, 'the new bytes, verified against the new entry');
  // A skill added on disk is listed, one removed is gone.
  await mkdir(join(dir, 'added'));
  await writeFile(join(dir, 'added/SKILL.md'), '---\nname: added\ndescription: Added while running\n---\n');
  await rm(join(dir, 'pdf-tools'), { recursive: true });
  await until(
    async () => (await skills.list()).skills.map((s) => s.uri).join() === `skill://acme/added/SKILL.md,${GIT}`,
    { what: 'the added skill listed, the removed one gone' },
  );
});

t.test('answers the folder gives alone are counted, the refused ones by their reason', async (t) => {
  const text = await (await fetch(`${causeway.adminUrl!}/metrics`)).text();
  const line = (method: string, outcome: string) =>
    text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('causeway_modern_requests_total{') &&
          l.includes(`method="${method}"`) &&
          l.includes(`outcome="${outcome}"`),
      );
  t.ok(line('skills/list', 'ok'), 'skills/list ok');
  t.ok(line('resources/read', 'invalid_params'), 'a refused read, by its reason');
});

t.test('broken skills are named in the log and left out', async (t) => {
  const left = causeway.logs.filter((l) => l.includes('skill left out')).join('\n');
  t.match(left, 'skill acme/no-frontmatter');
  t.match(left, 'skill acme/wrong-name');
  t.match(left, 'skill acme/too-many: more than 512 files');
  t.notMatch(left, 'hidden', 'dot folders are not skills');
});

t.test('legacy_client-to-legacy_upstream-skills: SKILL.md as a plain resource', async (t) => {
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(causeway.url)));
  t.teardown(() => client.close());
  const uris: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listResources(cursor === undefined ? {} : { cursor });
    uris.push(...page.resources.map((r) => r.uri));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  t.ok(uris.includes('test://static-text'), "the upstream's resources");
  t.ok(uris.includes(GIT), 'and the skill files');
  const read = await client.readResource({ uri: GIT });
  const content = read.contents[0] as { text?: string; mimeType?: string };
  t.equal(content.mimeType, 'text/markdown');
  t.equal(content.text, files['git-workflow/SKILL.md']);
  await t.rejects(
    client.readResource({ uri: 'skill://acme/git-workflow/../x' }),
    { code: -32602 },
    'traversal refused',
  );
  t.ok(
    (await client.listTools()).tools.some((x) => x.name === 'test_simple_text'),
    "the upstream's tools",
  );
});

t.test("modern_client-to-federated_legacy_upstreams-skills: each member's skills under its name", async (t) => {
  const fedDir = join(base, 'federated');
  const alpha = '---\nname: alpha\ndescription: For the first member\n---\nalpha\n';
  const beta = '---\nname: beta\ndescription: For the second member\n---\nbeta\n';
  await mkdir(join(fedDir, 'one/alpha'), { recursive: true });
  await mkdir(join(fedDir, 'two/beta'), { recursive: true });
  await writeFile(join(fedDir, 'one/alpha/SKILL.md'), alpha);
  await writeFile(join(fedDir, 'two/beta/SKILL.md'), beta);
  const second = await startLegacyServer({ label: 'two' });
  const fed = await startCauseway({
    upstreams: JSON.stringify({ one: { url: upstream.url }, two: { url: second.url } }),
    mounts: JSON.stringify({ '/fed': { upstreams: ['one', 'two'], skills: fedDir } }),
  });
  t.teardown(async () => {
    await fed.close();
    await second.close();
  });
  const client = new Client(
    { name: 'e2e-fed', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: {} },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(fed.url)));
  t.teardown(() => client.close());
  const skills = new SkillsClient(client);
  t.ok(skills.supported, 'the merged discover declares the extension');
  const { skills: list } = await skills.list();
  t.same(
    list.map((s) => s.uri),
    ['skill://one/alpha/SKILL.md', 'skill://two/beta/SKILL.md'],
  );
  t.equal((await skills.read(list[1]!)).text, beta, 'read and verified');
  t.ok(
    (await client.listTools()).tools.some((x) => x.name === 'two__test_simple_text'),
    "the members' tools, prefixed",
  );
});
