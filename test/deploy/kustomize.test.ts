// The Kubernetes manifests cannot drift from the schemas or from Causeway's config: every
// overlay is rendered with `kubectl kustomize`, every object is validated against the
// Kubernetes OpenAPI schemas offline, our own policies are checked, and each Causeway
// container's config file plus environment goes through loadConfig. Every check is also run on
// a deliberately broken copy of the render, to show that it can fail.

import t from 'tap';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { loadConfig, type Config } from '../../src/config/index.js';
import { resolveTopology } from '../../src/config/topology.js';
import { readFrontmatter } from '../../src/skills/load.js';
import { kubectl } from '../helpers/kubectl.js';

const KUBECTL = kubectl();
const OVERLAYS = fileURLToPath(new URL('../../../deploy/overlays/', import.meta.url));

// Rendered YAML: its shape is what the schema check vouches for, so the checks read it loosely.
type K8s = any;
type Check = (objs: K8s[]) => string[];

interface Model {
  validate(): void;
}
const MODELS: Record<string, new (data: K8s) => Model> = {};
for (const m of [
  ConfigMap,
  Secret,
  Service,
  Deployment,
  StatefulSet,
  PodDisruptionBudget,
  HorizontalPodAutoscaler,
  NetworkPolicy,
  ServiceMonitor,
]) {
  MODELS[`${m.apiVersion}/${m.kind}`] = m as unknown as new (data: K8s) => Model;
}

async function render(overlay: string): Promise<K8s[]> {
  const { stdout } = await promisify(execFile)(KUBECTL, ['kustomize', join(OVERLAYS, overlay)], {
    maxBuffer: 16 << 20,
  });
  return parseAllDocuments(stdout).map((doc) => {
    if (doc.errors.length > 0) throw doc.errors[0];
    return doc.toJS() as K8s;
  });
}

const ofKind = (objs: K8s[], kind: string): K8s[] => objs.filter((o) => o.kind === kind);
const named = (objs: K8s[], kind: string, name: string): K8s | undefined =>
  objs.find((o) => o.kind === kind && o.metadata?.name === name);
const workloads = (objs: K8s[]): K8s[] => objs.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
const podSpecs = (objs: K8s[]): { where: string; spec: K8s; owner: K8s }[] =>
  workloads(objs).map((w) => ({ where: `${w.kind}/${w.metadata.name}`, spec: w.spec.template.spec, owner: w }));
const containersOf = (spec: K8s): K8s[] => [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
/** Causeway is the container running our image. */
const isCauseway = (c: K8s): boolean => /(^|\/)causeway:/.test(c.image ?? '');
const causeways = (objs: K8s[]) =>
  podSpecs(objs).flatMap(({ where, spec, owner }) =>
    containersOf(spec)
      .filter(isCauseway)
      .map((c) => ({ where, spec, owner, c })),
  );

/** A port given by name or number, as the containerPort it means in this container. */
function containerPort(c: K8s, port: unknown): number | undefined {
  if (typeof port === 'number') return port;
  return (c.ports ?? []).find((p: K8s) => p.name === port)?.containerPort;
}

// --- schemas --------------------------------------------------------------------------------

const schemaProblems: Check = (objs) =>
  objs.flatMap((o) => {
    const model = MODELS[`${o.apiVersion}/${o.kind}`];
    if (!model) return [`${o.apiVersion}/${o.kind} ${o.metadata?.name}: no schema to validate it against`];
    try {
      new model(o).validate();
      return [];
    } catch (err) {
      return [`${o.kind}/${o.metadata?.name}: ${(err as Error).message}`];
    }
  });

// The schemas accept unknown fields, so a misspelt probe or securityContext key would pass
// them and silently do nothing; these are the fields the manifests use.
const KNOWN_KEYS: Record<string, readonly string[]> = {
  container: [
    'name',
    'image',
    'imagePullPolicy',
    'command',
    'args',
    'env',
    'envFrom',
    'ports',
    'resources',
    'restartPolicy',
    'securityContext',
    'startupProbe',
    'readinessProbe',
    'livenessProbe',
    'lifecycle',
    'volumeMounts',
    'workingDir',
  ],
  securityContext: [
    'runAsNonRoot',
    'runAsUser',
    'runAsGroup',
    'readOnlyRootFilesystem',
    'allowPrivilegeEscalation',
    'capabilities',
    'seccompProfile',
  ],
  probe: [
    'httpGet',
    'tcpSocket',
    'exec',
    'initialDelaySeconds',
    'periodSeconds',
    'timeoutSeconds',
    'failureThreshold',
    'successThreshold',
  ],
  podSpec: [
    'containers',
    'initContainers',
    'volumes',
    'securityContext',
    'terminationGracePeriodSeconds',
    'enableServiceLinks',
    'automountServiceAccountToken',
    'topologySpreadConstraints',
    'serviceAccountName',
    'affinity',
    'nodeSelector',
    'tolerations',
  ],
};
const unknownKeys = (what: string, obj: K8s, where: string): string[] =>
  Object.keys(obj ?? {})
    .filter((k) => !KNOWN_KEYS[what]!.includes(k))
    .map((k) => `${where}: unexpected ${what} field ${k}`);

const fieldProblems: Check = (objs) =>
  podSpecs(objs).flatMap(({ where, spec }) => [
    ...unknownKeys('podSpec', spec, where),
    ...containersOf(spec).flatMap((c) => [
      ...unknownKeys('container', c, `${where} ${c.name}`),
      ...unknownKeys('securityContext', c.securityContext, `${where} ${c.name}`),
      ...['startupProbe', 'readinessProbe', 'livenessProbe'].flatMap((p) =>
        unknownKeys('probe', c[p], `${where} ${c.name} ${p}`),
      ),
    ]),
  ]);

// --- policies -------------------------------------------------------------------------------

const securityProblems: Check = (objs) =>
  podSpecs(objs).flatMap(({ where, spec }) =>
    containersOf(spec).flatMap((c) => {
      const sc = c.securityContext ?? {};
      const pod = spec.securityContext ?? {};
      const at = `${where} ${c.name}`;
      const problems: string[] = [];
      if ((sc.runAsNonRoot ?? pod.runAsNonRoot) !== true) problems.push(`${at}: runAsNonRoot is not true`);
      if ((sc.runAsUser ?? pod.runAsUser) === 0) problems.push(`${at}: runs as uid 0`);
      if (sc.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem is not true`);
      if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
      if (sc.privileged === true) problems.push(`${at}: privileged`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL') || (sc.capabilities?.add ?? []).length > 0)
        problems.push(`${at}: capabilities are not all dropped`);
      if ((sc.seccompProfile ?? pod.seccompProfile)?.type !== 'RuntimeDefault')
        problems.push(`${at}: seccomp profile is not RuntimeDefault`);
      return problems;
    }),
  );

const resourceProblems: Check = (objs) =>
  podSpecs(objs).flatMap(({ where, spec }) =>
    containersOf(spec).flatMap((c) =>
      ['requests', 'limits'].flatMap((kind) =>
        ['cpu', 'memory'].filter((r) => !c.resources?.[kind]?.[r]).map((r) => `${where} ${c.name}: no ${kind}.${r}`),
      ),
    ),
  );

const imageProblems: Check = (objs) =>
  podSpecs(objs).flatMap(({ where, spec }) =>
    containersOf(spec)
      .filter((c) => {
        const tag = /:([^/:@]+)$/.exec(c.image ?? '')?.[1];
        return !(c.image ?? '').includes('@sha256:') && (tag === undefined || tag === 'latest');
      })
      .map((c) => `${where} ${c.name}: image ${c.image} has no pinned tag`),
  );

const hostPathProblems: Check = (objs) =>
  podSpecs(objs).flatMap(({ where, spec }) =>
    (spec.volumes ?? []).filter((v: K8s) => v.hostPath).map((v: K8s) => `${where}: hostPath volume ${v.name}`),
  );

/** Every ConfigMap / Secret a pod names exists in the render, with the keys it names. */
const referenceProblems: Check = (objs) => {
  const problems: string[] = [];
  const need = (kind: 'ConfigMap' | 'Secret', name: string, key: string | undefined, at: string) => {
    const obj = named(objs, kind, name);
    if (!obj) problems.push(`${at}: ${kind} ${name} is not in the render`);
    else if (key !== undefined && !(key in { ...obj.data, ...obj.stringData }))
      problems.push(`${at}: ${kind} ${name} has no key ${key}`);
  };
  for (const { where, spec } of podSpecs(objs)) {
    for (const c of containersOf(spec)) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
        if (ref)
          need(
            e.valueFrom.secretKeyRef ? 'Secret' : 'ConfigMap',
            ref.name,
            ref.key,
            `${where} ${c.name} env ${e.name}`,
          );
      }
      for (const f of c.envFrom ?? []) {
        if (f.secretRef) need('Secret', f.secretRef.name, undefined, `${where} ${c.name} envFrom`);
        if (f.configMapRef) need('ConfigMap', f.configMapRef.name, undefined, `${where} ${c.name} envFrom`);
      }
    }
    for (const v of spec.volumes ?? []) {
      const src = v.configMap
        ? (['ConfigMap', v.configMap.name, v.configMap.items] as const)
        : v.secret
          ? (['Secret', v.secret.secretName, v.secret.items] as const)
          : undefined;
      if (!src) continue;
      need(src[0], src[1], undefined, `${where} volume ${v.name}`);
      for (const item of src[2] ?? []) need(src[0], src[1], item.key, `${where} volume ${v.name}`);
    }
  }
  return problems;
};

// --- Causeway's own config, as the container would load it ----------------------------------

/** The environment Kubernetes would give the container (service links included unless off). */
function containerEnv(objs: K8s[], spec: K8s, c: K8s): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  if (spec.enableServiceLinks !== false) {
    for (const svc of ofKind(objs, 'Service')) {
      const prefix = svc.metadata.name.toUpperCase().replace(/-/g, '_');
      const first = svc.spec.ports?.[0];
      if (!first) continue;
      env[`${prefix}_SERVICE_HOST`] = '10.0.0.1';
      env[`${prefix}_SERVICE_PORT`] = String(first.port);
      env[`${prefix}_PORT`] = `tcp://10.0.0.1:${first.port}`;
      for (const p of svc.spec.ports) env[`${prefix}_PORT_${p.port}_TCP`] = `tcp://10.0.0.1:${p.port}`;
    }
  }
  const fromObj = (kind: string, name: string, key: string): string | undefined => {
    const o = named(objs, kind, name);
    if (kind === 'ConfigMap') return o?.data?.[key];
    const b64 = o?.data?.[key];
    return b64 === undefined ? o?.stringData?.[key] : Buffer.from(b64, 'base64').toString('utf8');
  };
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef)
      env[e.name] = fromObj('Secret', e.valueFrom.secretKeyRef.name, e.valueFrom.secretKeyRef.key);
    else if (e.valueFrom?.configMapKeyRef)
      env[e.name] = fromObj('ConfigMap', e.valueFrom.configMapKeyRef.name, e.valueFrom.configMapKeyRef.key);
    else env[e.name] = `unsupported valueFrom ${JSON.stringify(e.valueFrom)}`;
  }
  return env;
}

/** loadConfig over the container's args, with its mounted config file copied out of the render. */
function loadContainerConfig(objs: K8s[], spec: K8s, c: K8s): Config {
  const args: string[] = [...(c.args ?? [])];
  const at = args.indexOf('--config');
  const dir = mkdtempSync(join(tmpdir(), 'causeway-kustomize-'));
  try {
    if (at >= 0) {
      const path = args[at + 1]!;
      const mount = (c.volumeMounts ?? []).find((m: K8s) => m.mountPath === dirname(path));
      const volume = (spec.volumes ?? []).find((v: K8s) => v.name === mount?.name);
      const text = volume?.configMap
        ? named(objs, 'ConfigMap', volume.configMap.name)?.data?.[basename(path)]
        : undefined;
      if (text === undefined) throw new Error(`${c.name}: ${path} is not a file of a mounted ConfigMap`);
      args[at + 1] = join(dir, basename(path));
      writeFileSync(args[at + 1]!, text);
    }
    return loadConfig(args, containerEnv(objs, spec, c));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const configProblems =
  (expected: { storeKind: string; upstreamUrls: string[] }): Check =>
  (objs) => {
    const found = causeways(objs);
    if (found.length === 0) return ['no Causeway container in the render'];
    return found.flatMap(({ where, spec, c }) => {
      let cfg: Config;
      try {
        cfg = loadContainerConfig(objs, spec, c);
      } catch (err) {
        return [`${where} ${c.name}: ${(err as Error).message}`];
      }
      const problems: string[] = [];
      if (cfg.store.kind !== expected.storeKind) problems.push(`${where}: store.kind is ${cfg.store.kind}`);
      const urls = upstreamUrls(cfg).join(' ');
      if (urls !== expected.upstreamUrls.join(' ')) problems.push(`${where}: the upstream URLs are ${urls}`);
      if (cfg.listen.host !== '0.0.0.0' || cfg.admin.host !== '0.0.0.0')
        problems.push(`${where}: listen.host and admin.host must be 0.0.0.0 in a pod`);
      if (containerPort(c, 'mcp') !== cfg.listen.port)
        problems.push(`${where}: containerPort mcp is not listen.port ${cfg.listen.port}`);
      if (containerPort(c, 'admin') !== cfg.admin.port)
        problems.push(`${where}: containerPort admin is not admin.port ${cfg.admin.port}`);
      for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const port = c[p]?.httpGet?.port;
        if (port === undefined) problems.push(`${where}: no ${p} httpGet`);
        else if (containerPort(c, port) !== cfg.admin.port)
          problems.push(`${where}: ${p} is not on the admin port ${cfg.admin.port}`);
      }
      const drainSeconds = (cfg.drain.delayMs + cfg.drain.timeoutMs) / 1000;
      if (!(spec.terminationGracePeriodSeconds > drainSeconds)) {
        problems.push(
          `${where}: terminationGracePeriodSeconds ${spec.terminationGracePeriodSeconds} ` +
            `is not above the drain (${drainSeconds} s)`,
        );
      }
      return problems;
    });
  };

/** Every URL of every upstream the config names. */
const upstreamUrls = (cfg: Config): string[] => resolveTopology(cfg).topology.upstreams.flatMap((u) => u.urls);

/** `<pod>.<service>`, and `.<namespace>.svc.cluster.local` from another namespace. */
const POD_NAME = /^([a-z0-9-]+)-(\d+)\.([a-z0-9-]+)(\.[a-z0-9-]+\.svc\.cluster\.local)?$/;

/**
 * Each upstream URL names one pod (deploy/README.md: a session lives on the pod that opened it):
 * a pod of a StatefulSet in the render, by its name under the headless Service that governs it,
 * on a port that Service serves; together the URLs name every pod of the StatefulSet. A
 * ClusterIP Service's name would spread one session's requests over pods that do not know it.
 */
const perPodProblems: Check = (objs) =>
  causeways(objs).flatMap(({ where, spec, c }) => {
    let urls: string[];
    try {
      urls = upstreamUrls(loadContainerConfig(objs, spec, c));
    } catch (err) {
      return [`${where} ${c.name}: ${(err as Error).message}`];
    }
    const problems: string[] = [];
    const pods = new Map<K8s, Set<number>>();
    for (const url of urls) {
      const { hostname, port } = new URL(url);
      const m = POD_NAME.exec(hostname);
      const svc = m && named(objs, 'Service', m[3]!);
      const sts = m && named(objs, 'StatefulSet', m[1]!);
      const n = Number(m?.[2]);
      const at = `${where}: ${url}`;
      if (!m || !svc || !sts) problems.push(`${at} is not a pod of a StatefulSet under a Service of the render`);
      else if (svc.spec.clusterIP !== 'None') problems.push(`${at}: Service ${svc.metadata.name} is not headless`);
      else if (sts.spec.serviceName !== svc.metadata.name) {
        problems.push(`${at}: ${svc.metadata.name} does not govern ${m[1]}`);
      } else if (!(n < sts.spec.replicas)) problems.push(`${at}: StatefulSet ${m[1]} has no pod ${n}`);
      else if (!svc.spec.ports.some((p: K8s) => String(p.port) === port)) {
        problems.push(`${at}: no port ${port} on ${m[3]}`);
      } else pods.set(sts, (pods.get(sts) ?? new Set<number>()).add(n));
    }
    for (const [sts, seen] of pods) {
      const all = sts.spec.replicas;
      if (seen.size !== all) {
        problems.push(`${where}: the URLs name ${seen.size} of the ${all} pods of ${sts.metadata.name}`);
      }
    }
    return problems;
  });

/** The base ships no skills: no skills.dir, no skills volume, no ConfigMap holding a SKILL.md. */
const noSkillsProblems: Check = (objs) => [
  ...causeways(objs).flatMap(({ where, spec, c }) => {
    try {
      const dir = loadContainerConfig(objs, spec, c).skills.dir;
      return dir === '' ? [] : [`${where}: skills.dir is ${dir}`];
    } catch (err) {
      return [`${where} ${c.name}: ${(err as Error).message}`];
    }
  }),
  ...podSpecs(objs).flatMap(({ where, spec }) =>
    (spec.volumes ?? []).filter((v: K8s) => v.name === 'skills').map(() => `${where}: a skills volume`),
  ),
  ...ofKind(objs, 'ConfigMap')
    .filter((cm) => Object.keys(cm.data ?? {}).some((key) => /SKILL\.md$/.test(key)))
    .map((cm) => `ConfigMap ${cm.metadata.name} holds a SKILL.md`),
];

/**
 * skills.dir is a mounted ConfigMap whose items lay out one folder per skill, each with a
 * SKILL.md whose frontmatter Causeway accepts and names its folder.
 */
const skillsProblems: Check = (objs) =>
  causeways(objs).flatMap(({ where, spec, c }) => {
    let dir: string;
    try {
      dir = loadContainerConfig(objs, spec, c).skills.dir;
    } catch (err) {
      return [`${where} ${c.name}: ${(err as Error).message}`];
    }
    if (dir === '') return [`${where}: no skills.dir`];
    const mount = (c.volumeMounts ?? []).find((m: K8s) => m.mountPath === dir);
    const volume = (spec.volumes ?? []).find((v: K8s) => v.name === mount?.name);
    const cm = volume?.configMap ? named(objs, 'ConfigMap', volume.configMap.name) : undefined;
    if (!cm) return [`${where}: skills.dir ${dir} is not a mounted ConfigMap`];
    const items: { key: string; path: string }[] = volume.configMap.items ?? [];
    const skills = new Set(items.map((i) => i.path.split('/')[0]!));
    if (skills.size === 0) return [`${where}: the skills ConfigMap lays out no skill folders (items)`];
    return [...skills].flatMap((name) => {
      const manifest = items.find((i) => i.path === `${name}/SKILL.md`);
      const text = manifest && cm.data?.[manifest.key];
      if (text === undefined) return [`${where}: skill folder ${name} has no SKILL.md`];
      try {
        const fm = readFrontmatter(Buffer.from(text));
        return fm.name === name ? [] : [`${where}: ${name}/SKILL.md is named ${String(fm.name)}`];
      } catch (err) {
        return [`${where}: ${name}/SKILL.md: ${(err as Error).message}`];
      }
    });
  });

// --- the shape of each overlay --------------------------------------------------------------

const sidecarShapeProblems: Check = (objs) => {
  const problems: string[] = [];
  const [w, ...more] = workloads(objs);
  if (!w || more.length > 0) return ['expected exactly one workload'];
  const spec = w.spec.template.spec;
  const causeway = (spec.initContainers ?? []).find(isCauseway);
  if (causeway?.restartPolicy !== 'Always') problems.push('Causeway is not an initContainer with restartPolicy Always');
  if ((spec.containers ?? []).some(isCauseway)) problems.push('Causeway is also a regular container');
  const legacy = (spec.containers ?? []).filter((c: K8s) => !isCauseway(c));
  if (legacy.length !== 1) problems.push(`expected one legacy server container, found ${legacy.length}`);
  for (const c of legacy) if ((c.ports ?? []).length > 0) problems.push(`${c.name} declares ports`);
  if (w.spec.replicas !== 1) problems.push('with the memory store the sidecar runs one replica');
  const services = ofKind(objs, 'Service');
  if (services.length !== 1) problems.push(`expected one Service, found ${services.length}`);
  for (const svc of services) {
    const ports = svc.spec.ports ?? [];
    if (
      ports.length !== 1 ||
      containerPort(causeway ?? {}, ports[0].targetPort) !== containerPort(causeway ?? {}, 'mcp')
    ) {
      problems.push(`Service ${svc.metadata.name} exposes more or other than Causeway's data port`);
    }
  }
  return problems;
};

const gatewayShapeProblems: Check = (objs) => {
  const problems: string[] = [];
  const d = named(objs, 'Deployment', 'causeway');
  if (!d) return ['no Deployment causeway'];
  const spec = d.spec.template.spec;
  const c = spec.containers.find(isCauseway);
  const podLabels = d.spec.template.metadata.labels;
  const selects = (sel: K8s) =>
    Object.entries(sel?.matchLabels ?? {}).every(([k, v]) => podLabels[k] === v) && sel?.matchLabels;
  if (d.spec.replicas !== 3) problems.push(`replicas is ${d.spec.replicas}, not 3`);
  if (!ofKind(objs, 'PodDisruptionBudget').some((p) => selects(p.spec.selector)))
    problems.push('no PodDisruptionBudget for the Causeway pods');
  const hpa = ofKind(objs, 'HorizontalPodAutoscaler').find(
    (h) => h.spec.scaleTargetRef?.kind === 'Deployment' && h.spec.scaleTargetRef?.name === 'causeway',
  );
  if (!hpa?.spec.metrics?.some((m: K8s) => m.type === 'Resource' && m.resource?.name === 'cpu'))
    problems.push('no HorizontalPodAutoscaler on CPU');
  if (hpa && !(hpa.spec.minReplicas >= 3)) problems.push('the autoscaler may go below 3 replicas');
  const topologyKeys = (spec.topologySpreadConstraints ?? [])
    .filter((s: K8s) => selects(s.labelSelector))
    .map((s: K8s) => s.topologyKey);
  if (!topologyKeys.includes('kubernetes.io/hostname')) problems.push('no topology spread over nodes');
  if (!ofKind(objs, 'NetworkPolicy').some((n) => selects(n.spec.podSelector)))
    problems.push('no NetworkPolicy for the Causeway pods');
  // The ServiceMonitor must reach the admin port: its endpoint names a port of a Service it
  // selects, and that port's target is the container's admin port.
  const scraped = ofKind(objs, 'ServiceMonitor').flatMap((sm) =>
    ofKind(objs, 'Service')
      .filter((svc) =>
        Object.entries(sm.spec.selector?.matchLabels ?? {}).every(([k, v]) => svc.metadata.labels?.[k] === v),
      )
      .filter((svc) => Object.entries(svc.spec.selector ?? {}).every(([k, v]) => podLabels[k] === v))
      .flatMap((svc) => (sm.spec.endpoints ?? []).map((e: K8s) => svc.spec.ports.find((p: K8s) => p.name === e.port))),
  );
  if (!scraped.some((p) => p && containerPort(c, p.targetPort) === containerPort(c, 'admin')))
    problems.push('no ServiceMonitor scrapes the admin port');
  for (const name of ['CAUSEWAY_STORE_REDIS_URL', 'CAUSEWAY_STORE_REDIS_PASSWORD']) {
    if (!(c?.env ?? []).find((e: K8s) => e.name === name)?.valueFrom?.secretKeyRef)
      problems.push(`${name} does not come from a Secret`);
  }
  return problems;
};

// --- the tests ------------------------------------------------------------------------------

/**
 * The render as deployed: each secret still holding its shipped placeholder (`REPLACE…`; see
 * deploy/README.md, Secrets) given a real value, as a deployer must before applying it.
 */
function withRealSecrets(objs: K8s[]): K8s[] {
  const copy = structuredClone(objs);
  for (const secret of ofKind(copy, 'Secret')) {
    for (const [key, b64] of Object.entries<string>(secret.data ?? {})) {
      if (!Buffer.from(b64, 'base64').toString('utf8').startsWith('REPLACE')) continue;
      secret.data[key] = Buffer.from(randomBytes(32).toString('base64')).toString('base64');
    }
  }
  return copy;
}

const shipped = {
  sidecar: await render('sidecar'),
  gateway: await render('gateway'),
  'example-skills': await render('example-skills'),
};
const rendered = {
  sidecar: withRealSecrets(shipped.sidecar),
  gateway: withRealSecrets(shipped.gateway),
  'example-skills': withRealSecrets(shipped['example-skills']),
};
type Overlay = keyof typeof rendered;
/** example-skills is the sidecar with a skills folder: it has the sidecar's shape. */
const shapeOf = (overlay: Overlay): 'sidecar' | 'gateway' => (overlay === 'gateway' ? 'gateway' : 'sidecar');

const EXPECTED = {
  sidecar: { storeKind: 'memory', upstreamUrls: ['http://127.0.0.1:3000/mcp'] },
  'example-skills': { storeKind: 'memory', upstreamUrls: ['http://127.0.0.1:3000/mcp'] },
  gateway: { storeKind: 'redis', upstreamUrls: [0, 1, 2].map((n) => `http://tickets-mcp-${n}.tickets-mcp:3000/mcp`) },
};

/** A copy of the render with one thing broken. */
function broken(objs: K8s[], mutate: (objs: K8s[]) => void): K8s[] {
  const copy = structuredClone(objs);
  mutate(copy);
  return copy;
}
const firstPod = (objs: K8s[]): K8s => podSpecs(objs)[0]!.spec;
const causewayOf = (objs: K8s[]): K8s => causeways(objs)[0]!.c;
const causewaySecret = (objs: K8s[]): K8s =>
  ofKind(objs, 'Secret').find((s) => s.metadata.name.includes('causeway-secrets'));

interface Case {
  name: string;
  check: (overlay: Overlay) => Check;
  /** One mutation per overlay that the check must report. */
  breaks: (objs: K8s[], overlay: Overlay) => void;
}

/**
 * An edited config reaches the running pods and is reloaded there (README, Reloading): `--config`
 * names a file in a folder mounted whole from the ConfigMap (a subPath mount is never updated),
 * and the ConfigMap keeps its name (a name hash would make each edit a new ConfigMap and a rollout).
 */
const reloadProblems: Check = (objs) => {
  const problems: string[] = [];
  for (const { where, spec, c } of causeways(objs)) {
    const args: string[] = c.args ?? [];
    const file = args[args.indexOf('--config') + 1];
    if (!args.includes('--config') || file === undefined) {
      problems.push(`${where}: no --config`);
      continue;
    }
    const mount = (c.volumeMounts ?? []).find((m: K8s) => m.mountPath === dirname(file));
    if (!mount || mount.subPath !== undefined)
      problems.push(`${where}: ${dirname(file)} is not a folder mounted whole`);
    const name = spec.volumes?.find((v: K8s) => v.name === mount?.name)?.configMap?.name;
    if (typeof name !== 'string' || !name.endsWith('causeway-config')) {
      problems.push(`${where}: the config's ConfigMap ${name} is not causeway-config by its own name`);
    } else if (!named(objs, 'ConfigMap', name)) problems.push(`${where}: no ConfigMap ${name}`);
  }
  return problems;
};

const CASES: Case[] = [
  {
    name: 'every object validates against its OpenAPI schema',
    check: () => schemaProblems,
    breaks: (objs) => {
      causewayOf(objs).ports[0].containerPort = '8080';
    },
  },
  {
    name: 'every object kind has a schema',
    check: () => schemaProblems,
    breaks: (objs) => {
      objs.push({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } });
    },
  },
  {
    name: 'pod specs, containers, probes and securityContexts use only known fields',
    check: () => fieldProblems,
    breaks: (objs) => {
      const c = causewayOf(objs);
      c.readinesProbe = c.readinessProbe;
      delete c.readinessProbe;
    },
  },
  {
    name: 'every container runs non-root, read-only, unprivileged, no capabilities, seccomp RuntimeDefault',
    check: () => securityProblems,
    breaks: (objs) => {
      delete containersOf(firstPod(objs)).at(-1).securityContext.readOnlyRootFilesystem;
    },
  },
  {
    name: 'every container has cpu and memory requests and limits',
    check: () => resourceProblems,
    breaks: (objs) => {
      delete containersOf(firstPod(objs)).at(-1).resources.limits.memory;
    },
  },
  {
    name: 'every image has a pinned tag',
    check: () => imageProblems,
    breaks: (objs, overlay) => {
      const sidecar = shapeOf(overlay) === 'sidecar';
      const image = sidecar ? 'registry.example/tickets-mcp:latest' : 'registry.example/causeway';
      containersOf(firstPod(objs)).at(-1).image = image;
    },
  },
  {
    name: 'no hostPath volumes',
    check: () => hostPathProblems,
    breaks: (objs) => {
      firstPod(objs).volumes.push({ name: 'host', hostPath: { path: '/var/run' } });
    },
  },
  {
    name: 'every referenced ConfigMap, Secret and key is in the render',
    check: () => referenceProblems,
    breaks: (objs) => {
      causewayOf(objs).env.find((e: K8s) => e.valueFrom?.secretKeyRef).valueFrom.secretKeyRef.key = 'state-keys';
    },
  },
  {
    name:
      'the config file and env are accepted by loadConfig, with ' +
      'probes on the admin port and a long enough grace period',
    check: (overlay) => configProblems(EXPECTED[overlay]),
    breaks: (objs, overlay) => {
      if (overlay === 'gateway') {
        // Service links would set CAUSEWAY_ADMIN_PORT=tcp://… from Service causeway-admin.
        delete firstPod(objs).enableServiceLinks;
      } else {
        const secret = causewaySecret(objs);
        secret.data['mrtr-state-keys'] = Buffer.from('not-32-bytes').toString('base64');
      }
    },
  },
  {
    name: 'probes are on the admin port',
    check: (overlay) => configProblems(EXPECTED[overlay]),
    breaks: (objs) => {
      causewayOf(objs).livenessProbe.httpGet.port = 'mcp';
    },
  },
  {
    name: 'an edited config reaches the running pods: its ConfigMap keeps its name, mounted as a folder',
    check: () => reloadProblems,
    breaks: (objs) => {
      // As a generator without disableNameSuffixHash names it.
      const volume = firstPod(objs).volumes.find((v: K8s) => v.configMap?.name?.endsWith('causeway-config'));
      const map = named(objs, 'ConfigMap', volume.configMap.name);
      volume.configMap.name = map.metadata.name = `${map.metadata.name}-5g7h8k9m2t`;
    },
  },
  {
    name: 'terminationGracePeriodSeconds is above the drain',
    check: (overlay) => configProblems(EXPECTED[overlay]),
    breaks: (objs) => {
      firstPod(objs).terminationGracePeriodSeconds = 15;
    },
  },
  {
    name:
      'skills: none from the base; example-skills mounts a ConfigMap laid out as skill folders, each SKILL.md ' +
      'naming its folder',
    check: (overlay) => (overlay === 'example-skills' ? skillsProblems : noSkillsProblems),
    breaks: (objs, overlay) => {
      if (overlay !== 'example-skills') {
        causewayOf(objs).env.push({ name: 'CAUSEWAY_SKILLS_DIR', value: '/etc/causeway-skills' });
      } else {
        const skills = firstPod(objs).volumes.find((v: K8s) => v.name === 'skills');
        skills.configMap.items.find((i: K8s) => i.path.endsWith('/SKILL.md')).path = 'renamed/SKILL.md';
      }
    },
  },
  {
    name:
      'the overlay has its shape (sidecar: native sidecar, hidden server; ' +
      'gateway: 3 replicas, PDB, HPA, ServiceMonitor, spread, NetworkPolicy)',
    check: (overlay) => (shapeOf(overlay) === 'sidecar' ? sidecarShapeProblems : gatewayShapeProblems),
    breaks: (objs, overlay) => {
      if (shapeOf(overlay) === 'sidecar') delete firstPod(objs).initContainers[0].restartPolicy;
      else {
        const i = objs.findIndex((o) => o.kind === 'ServiceMonitor');
        objs[i].spec.endpoints[0].port = 'mcp';
      }
    },
  },
];

for (const overlay of ['sidecar', 'gateway', 'example-skills'] as const) {
  t.test(`deploy/overlays/${overlay}`, async (t) => {
    const objs = rendered[overlay];
    t.ok(objs.length > 0, 'renders');
    for (const c of CASES) {
      t.test(c.name, async (t) => {
        t.same(c.check(overlay)(objs), [], 'no problems in the render');
        t.not(c.check(overlay)(broken(objs, (o) => c.breaks(o, overlay))).length, 0, 'a broken copy is caught');
      });
    }
  });
}

t.test('as shipped, the placeholder secrets are refused at start-up', async (t) => {
  for (const overlay of ['sidecar', 'gateway'] as const) {
    const problems = configProblems(EXPECTED[overlay])(shipped[overlay]);
    const text = problems.join('\n');
    t.match(text, /principal\.hashSecret: still the shipped placeholder/, `${overlay}: principal-hash-secret`);
    t.match(text, /mrtr\.stateKeys\[0\]: still the shipped placeholder/, `${overlay}: mrtr-state-keys`);
  }
  const gateway = configProblems(EXPECTED.gateway)(shipped.gateway).join('\n');
  t.match(gateway, /store\.redisPassword: still the shipped placeholder/, 'gateway: redis-password');
});

t.test('the gateway reaches each pod of the legacy server by its name under a headless Service', async (t) => {
  const { gateway } = rendered;
  t.same(perPodProblems(gateway), [], 'one URL per pod of the StatefulSet tickets-mcp, under its headless Service');
  const mutations: [string, (objs: K8s[]) => void][] = [
    ['the Service is a ClusterIP one', (o) => delete named(o, 'Service', 'tickets-mcp').spec.clusterIP],
    [
      'a URL names the Service, not a pod',
      (o) => {
        const cm = ofKind(o, 'ConfigMap').find((x) => x.data?.['causeway.json']);
        cm.data['causeway.json'] = cm.data['causeway.json'].replace('tickets-mcp-1.tickets-mcp', 'tickets-mcp');
      },
    ],
    ['the server scaled beyond the URLs', (o) => (named(o, 'StatefulSet', 'tickets-mcp').spec.replicas = 4)],
    [
      'the StatefulSet governed by another Service',
      (o) => (named(o, 'StatefulSet', 'tickets-mcp').spec.serviceName = 'other'),
    ],
  ];
  for (const [name, mutate] of mutations) t.not(perPodProblems(broken(gateway, mutate)).length, 0, name);
});

t.test('further shape mutations are caught', async (t) => {
  const { sidecar, gateway } = rendered;
  const mutations: [string, K8s[], Check, (objs: K8s[]) => void][] = [
    [
      'legacy server declares a port',
      sidecar,
      sidecarShapeProblems,
      (o) => (firstPod(o).containers[0].ports = [{ containerPort: 3000 }]),
    ],
    [
      'sidecar Service exposes the admin port',
      sidecar,
      sidecarShapeProblems,
      (o) => ofKind(o, 'Service')[0].spec.ports.push({ name: 'admin', port: 9464, targetPort: 'admin' }),
    ],
    ['sidecar with two replicas', sidecar, sidecarShapeProblems, (o) => (workloads(o)[0].spec.replicas = 2)],
    [
      'gateway with 2 replicas',
      gateway,
      gatewayShapeProblems,
      (o) => (named(o, 'Deployment', 'causeway').spec.replicas = 2),
    ],
    [
      'gateway without PDB',
      gateway,
      gatewayShapeProblems,
      (o) =>
        o.splice(
          o.findIndex((x) => x.kind === 'PodDisruptionBudget'),
          1,
        ),
    ],
    [
      'HPA on memory',
      gateway,
      gatewayShapeProblems,
      (o) => (ofKind(o, 'HorizontalPodAutoscaler')[0].spec.metrics[0].resource.name = 'memory'),
    ],
    [
      'no topology spread',
      gateway,
      gatewayShapeProblems,
      (o) => delete named(o, 'Deployment', 'causeway').spec.template.spec.topologySpreadConstraints,
    ],
    [
      'no NetworkPolicy for Causeway',
      gateway,
      gatewayShapeProblems,
      (o) =>
        o.splice(
          o.findIndex((x) => x.kind === 'NetworkPolicy' && x.metadata.name === 'causeway'),
          1,
        ),
    ],
    [
      'Redis password as a literal',
      gateway,
      gatewayShapeProblems,
      (o) => {
        const e = causewayOf(o).env.find((x: K8s) => x.name === 'CAUSEWAY_STORE_REDIS_PASSWORD');
        delete e.valueFrom;
        e.value = 'secret';
      },
    ],
    [
      'Redis pod running as uid 0',
      gateway,
      securityProblems,
      (o) => (named(o, 'StatefulSet', 'causeway-redis').spec.template.spec.securityContext.runAsUser = 0),
    ],
    [
      'sidecar Causeway (an init container) allowed to run as root',
      sidecar,
      securityProblems,
      (o) => (causewayOf(o).securityContext.runAsNonRoot = false),
    ],
    [
      'unknown setting in the config file',
      gateway,
      configProblems(EXPECTED.gateway),
      (o) => {
        const cm = ofKind(o, 'ConfigMap')[0];
        cm.data['causeway.json'] = cm.data['causeway.json'].replace('"drain": {', '"drain": { "delaysMs": 5000,');
      },
    ],
  ];
  for (const [name, objs, check, mutate] of mutations) t.not(check(broken(objs, mutate)).length, 0, name);
});
