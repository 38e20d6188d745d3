import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler, type IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job, type IJob } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy, type INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { IPodTemplateSpec } from 'kubernetes-models/v1/PodTemplateSpec';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { settingVariables } from '../../src/config/config.js';

/*
 * deploy/kubernetes, as `kubectl kustomize` renders each overlay: every object valid against the
 * Kubernetes API schemas (kubernetes-models), and the properties a cluster would only show once
 * it went wrong: non-root read-only containers, probes on the listeners that answer them,
 * resources, secrets referenced and never written, migrations as their own Job, the admin
 * listener fenced off, the api's autoscaler and disruption budget. kubectl must be on the PATH
 * (.ci/run installs Debian's kubernetes-client when it is not): without it these tests fail.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KUBERNETES = join(ROOT, 'deploy', 'kubernetes');
const OVERLAYS = ['sandbox', 'production'] as const;
type Overlay = (typeof OVERLAYS)[number];
const overlayDir = (overlay: Overlay) => join(KUBERNETES, 'overlays', overlay);

const SECRET_NAME = 'gov-payment-channel-secrets';
const SECRET_KEYS = ['ADMIN_TOKEN', 'WEBHOOK_SECRET_KEY', 'DATABASE_URL', 'REDIS_URL'];
const CONFIG_NAME = 'gov-payment-channel-config';
const API = 'gov-payment-channel-api';
const WORKER = 'gov-payment-channel-worker';
const MIGRATE = 'gov-payment-channel-migrate';
const SIMULATOR = 'gov-payment-channel-simulator';
/** After SIGTERM and the drain wait, how long the service gives its listeners to close before it exits anyway (src/bin/api-main.ts). */
const CLOSE_DEADLINE_SECONDS = 10;
/** SHUTDOWN_DRAIN_MS outside `local` when unset (src/config/config.ts). */
const DEFAULT_DRAIN_MS = 5000;

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; labels?: Record<string, string> };
}

const isKubeObject = (value: unknown): value is KubeObject =>
  typeof value === 'object' && value !== null && typeof (value as KubeObject).apiVersion === 'string' && typeof (value as KubeObject).kind === 'string';

const run = promisify(execFile);

/** The overlay's objects as `kubectl kustomize` renders them; an absent kubectl is a failure, not a skip. */
async function kustomize(dir: string): Promise<KubeObject[]> {
  const { stdout } = await run('kubectl', ['kustomize', dir], { maxBuffer: 16 * 1024 * 1024 }).catch((err: NodeJS.ErrnoException & { stderr?: string }) => {
    if (err.code === 'ENOENT') throw new Error('kubectl is not on the PATH: install it (Debian: apt-get install kubernetes-client) to render deploy/kubernetes');
    throw new Error(`kubectl kustomize ${relative(ROOT, dir)} failed: ${err.stderr ?? err.message}`);
  });
  return parseAllDocuments(stdout).map((doc) => {
    const value: unknown = doc.toJSON();
    if (!isKubeObject(value)) throw new Error(`rendered a document that is no Kubernetes object: ${JSON.stringify(value)}`);
    return value;
  });
}

/** Throws what the object's API schema finds wrong with it; an object of a kind without one is wrong too. */
function validateAgainstSchema(obj: KubeObject): void {
  if (Deployment.is(obj)) return new Deployment(obj).validate();
  if (Job.is(obj)) return new Job(obj).validate();
  if (Service.is(obj)) return new Service(obj).validate();
  if (ConfigMap.is(obj)) return new ConfigMap(obj).validate();
  if (NetworkPolicy.is(obj)) return new NetworkPolicy(obj).validate();
  if (PodDisruptionBudget.is(obj)) return new PodDisruptionBudget(obj).validate();
  if (HorizontalPodAutoscaler.is(obj)) return new HorizontalPodAutoscaler(obj).validate();
  if (Secret.is(obj)) return new Secret(obj).validate();
  throw new Error(`no schema checked here for ${obj.apiVersion} ${obj.kind}: add its kubernetes-models class`);
}

const named = <T extends KubeObject>(objects: T[], name: string): T => {
  const found = objects.find((o) => o.metadata?.name === name);
  if (!found) throw new Error(`no ${name} among ${objects.map((o) => `${o.kind}/${o.metadata?.name}`).join(', ')}`);
  return found;
};

const podSpec = (template: IPodTemplateSpec | undefined): IPodSpec => {
  if (!template?.spec) throw new Error('a workload without a pod spec');
  return template.spec;
};

const onlyContainer = (spec: IPodSpec): IContainer => {
  expect(spec.containers).toHaveLength(1);
  const [container] = spec.containers;
  if (!container) throw new Error('no container');
  return container;
};

/** A container's environment as the kubelet builds it: envFrom's ConfigMaps first, then env (secret references as `secret:NAME/KEY`). */
function environment(container: IContainer, configMaps: IConfigMap[]): Map<string, string> {
  const env = new Map<string, string>();
  for (const from of container.envFrom ?? []) {
    const data = named(configMaps, from.configMapRef?.name ?? '(a source that is no ConfigMap)').data ?? {};
    for (const [key, value] of Object.entries(data)) env.set(key, value);
  }
  for (const variable of container.env ?? []) {
    const secret = variable.valueFrom?.secretKeyRef;
    env.set(variable.name, secret ? `secret:${secret.name}/${secret.key}` : (variable.value ?? ''));
  }
  return env;
}

/** A probe's path and container port number (named ports resolved). */
function probeTarget(probe: IProbe | undefined, container: IContainer): { path: string | undefined; port: number | undefined } {
  const port = probe?.httpGet?.port;
  const number = typeof port === 'string' ? container.ports?.find((p) => p.name === port)?.containerPort : port;
  return { path: probe?.httpGet?.path, port: number };
}

const MEMORY_UNITS: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, K: 1e3, M: 1e6, G: 1e9 };
function bytes(quantity: string | number | undefined): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(String(quantity ?? ''));
  const unit = MEMORY_UNITS[match?.[2] ?? ''];
  if (!match?.[1] || unit === undefined) throw new Error(`not a memory quantity: ${String(quantity)}`);
  return Number(match[1]) * unit;
}

/** Seconds a preStop hook waits: the sleep action's, or a `setTimeout(..., ms)` exec'd in node. */
function preStopSeconds(container: IContainer): number {
  const preStop = container.lifecycle?.preStop;
  if (preStop?.sleep) return preStop.sleep.seconds;
  const script = preStop?.exec?.command?.join(' ') ?? '';
  const ms = /setTimeout\([^,]*,\s*(\d+)\s*\)/.exec(script)?.[1];
  if (ms === undefined) throw new Error(`${container.name} has no preStop wait`);
  return Number(ms) / 1000;
}

/** The heap cap the image's CMD gives Node (Dockerfile), in bytes. */
async function imageHeapBytes(): Promise<number> {
  const dockerfile = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
  const mb = /--max-old-space-size=(\d+)/.exec(dockerfile)?.[1];
  if (mb === undefined) throw new Error('the Dockerfile gives Node no --max-old-space-size');
  return Number(mb) * 1024 ** 2;
}

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  Object.entries(selector ?? {}).every(([key, value]) => labels?.[key] === value);

interface Rendered {
  objects: KubeObject[];
  deployments: IDeployment[];
  jobs: IJob[];
  configMaps: IConfigMap[];
  services: IService[];
  policies: INetworkPolicy[];
  budgets: IPodDisruptionBudget[];
  autoscalers: IHorizontalPodAutoscaler[];
}

const byKind = (objects: KubeObject[]): Rendered => ({
  objects,
  deployments: objects.filter(Deployment.is),
  jobs: objects.filter(Job.is),
  configMaps: objects.filter(ConfigMap.is),
  services: objects.filter(Service.is),
  policies: objects.filter(NetworkPolicy.is),
  budgets: objects.filter(PodDisruptionBudget.is),
  autoscalers: objects.filter(HorizontalPodAutoscaler.is),
});

/** Each overlay rendered once, on its first test's demand: without kubectl every test fails saying so. */
const rendered = new Map<Overlay, Promise<Rendered>>();
function render(overlay: Overlay): Promise<Rendered> {
  let r = rendered.get(overlay);
  if (!r) {
    r = kustomize(overlayDir(overlay)).then(byKind);
    rendered.set(overlay, r);
  }
  return r;
}

describe.each(OVERLAYS)('deploy/kubernetes/overlays/%s', (overlay) => {
  it('renders only objects valid against the Kubernetes API schemas', async () => {
    const { objects } = await render(overlay);
    expect(objects.length).toBeGreaterThan(0);
    for (const obj of objects) expect(() => validateAgainstSchema(obj), `${obj.kind}/${obj.metadata?.name}`).not.toThrow();
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['Deployment', 'Job', 'Service', 'ConfigMap', 'NetworkPolicy', 'PodDisruptionBudget', 'HorizontalPodAutoscaler']));
  });

  it('writes no Secret: every secret is a reference to the operator-made gov-payment-channel-secrets', async () => {
    const { objects, deployments, jobs } = await render(overlay);
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    for (const workload of [...deployments, ...jobs]) {
      for (const container of podSpec(workload.spec?.template).containers) {
        for (const variable of container.env ?? []) {
          const ref = variable.valueFrom?.secretKeyRef;
          if (!ref) continue;
          expect(ref.name, `${container.name} ${variable.name}`).toBe(SECRET_NAME);
          expect(SECRET_KEYS, `${container.name} ${variable.name}`).toContain(ref.key);
          expect(ref.key, 'a secret goes into the variable of its own name').toBe(variable.name);
        }
        expect(container.envFrom?.some((from) => from.secretRef) ?? false, `${container.name} takes a whole Secret`).toBe(false);
      }
    }
  });

  it('runs every container non-root (uid 1000) on a read-only root file system, without privileges, with resources set', async () => {
    const { deployments, jobs } = await render(overlay);
    const heap = await imageHeapBytes();
    const images = new Set<string>();
    for (const workload of [...deployments, ...jobs]) {
      const spec = podSpec(workload.spec?.template);
      expect(spec.automountServiceAccountToken, workload.metadata?.name).toBe(false);
      for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
        const at = `${workload.metadata?.name}/${container.name}`;
        const own = container.securityContext ?? {};
        const pod = spec.securityContext ?? {};
        expect(own.runAsNonRoot ?? pod.runAsNonRoot, at).toBe(true);
        expect(own.runAsUser ?? pod.runAsUser, at).toBe(1000);
        expect(own.readOnlyRootFilesystem, at).toBe(true);
        expect(own.allowPrivilegeEscalation, at).toBe(false);
        expect(own.capabilities?.drop, at).toContain('ALL');
        expect(own.capabilities?.add ?? [], at).toEqual([]);
        expect(own.privileged ?? false, at).toBe(false);
        expect((own.seccompProfile ?? pod.seccompProfile)?.type, at).toBe('RuntimeDefault');
        const { requests, limits } = container.resources ?? {};
        for (const quantity of ['cpu', 'memory']) {
          expect(requests?.[quantity], `${at} requests ${quantity}`).toBeDefined();
          expect(limits?.[quantity], `${at} limits ${quantity}`).toBeDefined();
        }
        expect(bytes(limits?.memory), `${at} memory limit over its request`).toBeGreaterThanOrEqual(bytes(requests?.memory));
        images.add(container.image ?? '');
      }
    }
    for (const name of [API, WORKER]) {
      const limit = bytes(onlyContainer(podSpec(named(deployments, name).spec?.template)).resources?.limits?.memory);
      // The V8 heap is the cap, not the process: the young generation, code and buffers come on top.
      expect(limit, `${name}: memory limit against the image's heap cap of ${heap / 1024 ** 2} MB`).toBeGreaterThanOrEqual(heap * 1.5);
    }
    // One image, its tag the overlay's.
    expect([...images]).toHaveLength(1);
    expect([...images][0]).toMatch(/^gov-payment-channel:[\w][\w.-]*$/);
    expect([...images][0]).not.toContain('set-by-the-overlay');
  });

  it('runs the api with its probes on the partner listener, a preStop wait, and no migrations at start', async () => {
    const { deployments, configMaps } = await render(overlay);
    const api = named(deployments, API);
    const spec = podSpec(api.spec?.template);
    const container = onlyContainer(spec);
    const env = environment(container, configMaps);
    expect(env.get('PROCESS_ROLE')).toBe('api');
    expect(env.get('MIGRATE_ON_START')).toBe('false');
    expect(env.get('PORT')).toBe('3000');
    expect(env.get('ADMIN_PORT')).toBe('3001');
    expect(container.ports).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'http', containerPort: 3000 }), expect.objectContaining({ name: 'admin', containerPort: 3001 })]));
    expect(probeTarget(container.livenessProbe, container)).toEqual({ path: '/api/v1/health/live', port: 3000 });
    expect(probeTarget(container.readinessProbe, container)).toEqual({ path: '/api/v1/health/ready', port: 3000 });
    // The replica count is the autoscaler's: an apply must not reset it.
    expect(api.spec?.replicas).toBeUndefined();
    expect(api.spec?.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    const wait = preStopSeconds(container);
    expect(wait).toBeGreaterThanOrEqual(5);
    const drainSeconds = Number(env.get('SHUTDOWN_DRAIN_MS') ?? DEFAULT_DRAIN_MS) / 1000;
    expect(spec.terminationGracePeriodSeconds ?? 30, 'grace period past the preStop wait, the drain and the close').toBeGreaterThan(wait + drainSeconds + CLOSE_DEADLINE_SECONDS);
    for (const secret of SECRET_KEYS) expect(env.get(secret)).toBe(`secret:${SECRET_NAME}/${secret}`);
  });

  it('runs the worker with its probes on the admin listener, port 3002, and no migrations at start', async () => {
    const { deployments, configMaps } = await render(overlay);
    const spec = podSpec(named(deployments, WORKER).spec?.template);
    const container = onlyContainer(spec);
    const env = environment(container, configMaps);
    expect(env.get('PROCESS_ROLE')).toBe('worker');
    expect(env.get('MIGRATE_ON_START')).toBe('false');
    // Set: the image's ADMIN_PORT=3001 would otherwise win over the worker's default.
    expect(env.get('ADMIN_PORT')).toBe('3002');
    expect(container.ports).toEqual([expect.objectContaining({ name: 'admin', containerPort: 3002 })]);
    expect(probeTarget(container.livenessProbe, container)).toEqual({ path: '/health/live', port: 3002 });
    expect(probeTarget(container.readinessProbe, container)).toEqual({ path: '/health/ready', port: 3002 });
    expect(spec.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(CLOSE_DEADLINE_SECONDS);
    for (const secret of SECRET_KEYS) expect(env.get(secret)).toBe(`secret:${SECRET_NAME}/${secret}`);
  });

  it('has every Deployment leave migrations to the migration Job, which runs the migrate command once', async () => {
    const { deployments, jobs, configMaps } = await render(overlay);
    for (const deployment of deployments) {
      const container = onlyContainer(podSpec(deployment.spec?.template));
      if (deployment.metadata?.name === SIMULATOR) continue;
      expect(environment(container, configMaps).get('MIGRATE_ON_START'), deployment.metadata?.name).toBe('false');
    }
    const job = named(jobs, MIGRATE);
    const spec = podSpec(job.spec?.template);
    const container = onlyContainer(spec);
    expect(container.command).toEqual(['node', 'dist/src/bin/migrate.js']);
    expect(container.args ?? []).toEqual([]);
    expect(spec.restartPolicy).toBe('Never');
    const env = environment(container, configMaps);
    expect(env.get('DATABASE_URL')).toBe(`secret:${SECRET_NAME}/DATABASE_URL`);
    expect(env.get('APP_ENV')).toBe(overlay);
  });

  it('lets the migration step be applied alone: its label selector picks the ConfigMap and the Job, nothing else', async () => {
    const { objects } = await render(overlay);
    // docs/deployment.md: kubectl apply -k <overlay> -l 'app.kubernetes.io/component in (config,migrate)'
    const step = objects.filter((o) => ['config', 'migrate'].includes(o.metadata?.labels?.['app.kubernetes.io/component'] ?? ''));
    expect(step.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Job']);
  });

  it('sets only settings the service reads, from a ConfigMap whose name changes with its contents', async () => {
    const { deployments, jobs, configMaps } = await render(overlay);
    const known = new Set(settingVariables());
    const [config] = configMaps;
    expect(configMaps).toHaveLength(1);
    expect(config?.metadata?.name).toMatch(new RegExp(`^${CONFIG_NAME}-[a-z0-9]{10}$`));
    expect(config?.data?.APP_ENV).toBe(overlay);
    for (const key of Object.keys(config?.data ?? {})) expect(known, `ConfigMap key ${key}`).toContain(key);
    for (const workload of [...deployments, ...jobs]) {
      const container = onlyContainer(podSpec(workload.spec?.template));
      for (const name of environment(container, configMaps).keys()) expect(known, `${workload.metadata?.name} sets ${name}`).toContain(name);
    }
  });

  it('serves the partner API on a ClusterIP Service and the admin listeners on ClusterIP ones only', async () => {
    const { services, deployments } = await render(overlay);
    const api = named(services, API);
    expect(api.spec?.ports).toEqual([expect.objectContaining({ port: 3000, targetPort: 'http' })]);
    expect(matches(api.spec?.selector, named(deployments, API).spec?.template.metadata?.labels)).toBe(true);
    for (const service of services) expect(service.spec?.type ?? 'ClusterIP', service.metadata?.name).toBe('ClusterIP');
    for (const service of services) expect(service.spec?.externalIPs ?? [], service.metadata?.name).toEqual([]);
  });

  it('lets the partner port in from the ingress and the admin ports only from this namespace and monitoring', async () => {
    const { policies, deployments } = await render(overlay);
    const checks: [string, number][] = [
      [API, 3001],
      [WORKER, 3002],
    ];
    for (const [name, adminPort] of checks) {
      const labels = named(deployments, name).spec?.template.metadata?.labels;
      const selecting = policies.filter((p) => matches(p.spec?.podSelector.matchLabels, labels) && (p.spec?.policyTypes ?? ['Ingress']).includes('Ingress'));
      // Selected by an ingress policy, the pod takes only what some policy's rule allows.
      expect(selecting.length, `${name} is selected by an ingress policy`).toBeGreaterThan(0);
      const rules = selecting.flatMap((p) => p.spec?.ingress ?? []);
      const admitting = rules.filter((rule) => (rule.ports ?? []).length === 0 || (rule.ports ?? []).some((p) => p.port === adminPort || p.port === 'admin'));
      expect(admitting.length, `${name}: some rule admits the admin port`).toBeGreaterThan(0);
      for (const rule of admitting) {
        expect(rule.from?.length ?? 0, `${name}: a rule admitting port ${adminPort} from anywhere`).toBeGreaterThan(0);
        for (const peer of rule.from ?? []) {
          expect(peer.ipBlock, `${name}: port ${adminPort} open to addresses`).toBeUndefined();
          if (peer.namespaceSelector) expect(peer.namespaceSelector.matchLabels, `${name}: port ${adminPort} open to another namespace`).toEqual({ 'kubernetes.io/metadata.name': 'monitoring' });
          else expect(peer.podSelector, `${name}: port ${adminPort} peer`).toBeDefined();
        }
      }
    }
    const apiLabels = named(deployments, API).spec?.template.metadata?.labels;
    const partnerRules = policies.filter((p) => matches(p.spec?.podSelector.matchLabels, apiLabels)).flatMap((p) => p.spec?.ingress ?? []);
    const partner = partnerRules.filter((rule) => (rule.ports ?? []).some((p) => p.port === 3000));
    expect(partner.length).toBeGreaterThan(0);
    for (const rule of partner) for (const peer of rule.from ?? []) expect(peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'], 'port 3000 from the ingress controller').toBeDefined();
  });

  it('bounds the api with a PodDisruptionBudget and scales it with an autoscaling/v2 HorizontalPodAutoscaler', async () => {
    const { budgets, autoscalers, deployments } = await render(overlay);
    const labels = named(deployments, API).spec?.template.metadata?.labels;
    const budget = named(budgets, API);
    expect(matches(budget.spec?.selector?.matchLabels, labels)).toBe(true);
    expect(budget.spec?.maxUnavailable ?? budget.spec?.minAvailable).toBeDefined();
    const hpa = named(autoscalers, API);
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec?.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: API });
    expect(hpa.spec?.minReplicas ?? 1).toBeGreaterThanOrEqual(1);
    expect(hpa.spec?.maxReplicas).toBeGreaterThanOrEqual(hpa.spec?.minReplicas ?? 1);
    expect(hpa.spec?.metrics?.map((m) => m.resource?.name)).toContain('cpu');
    // The api's requests are what CPU utilisation is measured against.
    expect(onlyContainer(podSpec(named(deployments, API).spec?.template)).resources?.requests?.cpu).toBeDefined();
  });
});

describe('the overlays apart', () => {
  it('runs the sandbox against its own simulator Deployment, from the same image', async () => {
    const { deployments, services, configMaps } = await render('sandbox');
    const simulator = onlyContainer(podSpec(named(deployments, SIMULATOR).spec?.template));
    expect(simulator.command).toEqual(['node', 'dist/simulator/bin/simulator.js']);
    expect(simulator.image).toBe(onlyContainer(podSpec(named(deployments, API).spec?.template)).image);
    const port = environment(simulator, configMaps).get('SIMULATOR_PORT');
    expect(named(services, SIMULATOR).spec?.ports?.map((p) => String(p.port))).toEqual([port]);
    const config = configMaps[0]?.data ?? {};
    for (const system of ['MOF', 'ETAX', 'POLICE']) expect(config[`MINISTRY_${system}_URL`]).toBe(`http://${SIMULATOR}:${port}`);
  });

  it('runs production against the ministries, with more replicas and a wider autoscaling range', async () => {
    const production = await render('production');
    const sandbox = await render('sandbox');
    expect(production.deployments.map((d) => d.metadata?.name)).not.toContain(SIMULATOR);
    const config = production.configMaps[0]?.data ?? {};
    for (const system of ['MOF', 'ETAX', 'POLICE']) expect(config[`MINISTRY_${system}_URL`]).toMatch(/^https:\/\//);
    const [prodHpa, sandboxHpa] = [named(production.autoscalers, API).spec, named(sandbox.autoscalers, API).spec];
    expect(prodHpa?.minReplicas ?? 1).toBeGreaterThan(sandboxHpa?.minReplicas ?? 1);
    expect(prodHpa?.maxReplicas ?? 0).toBeGreaterThan(sandboxHpa?.maxReplicas ?? 0);
    expect(sandboxHpa?.maxReplicas ?? 0).toBeLessThanOrEqual(2);
    expect(named(production.deployments, WORKER).spec?.replicas ?? 1).toBeGreaterThan(named(sandbox.deployments, WORKER).spec?.replicas ?? 1);
  });

  it('rolls the pods when a setting changes: the ConfigMap is renamed and every workload follows', async () => {
    const work = await mkdtemp(join(tmpdir(), 'kustomize-'));
    try {
      // kustomize 2 (kubectl 1.20) takes a base by a relative path only.
      const kustomization = {
        bases: [relative(work, overlayDir('sandbox'))],
        configMapGenerator: [{ name: CONFIG_NAME, behavior: 'merge', literals: ['LOG_LEVEL=debug'] }],
      };
      await writeFile(join(work, 'kustomization.yaml'), JSON.stringify(kustomization));
      const changed = byKind(await kustomize(work));
      const before = (await render('sandbox')).configMaps[0]?.metadata?.name;
      const after = changed.configMaps[0]?.metadata?.name;
      expect(after).toBeDefined();
      expect(after).not.toBe(before);
      for (const workload of [...changed.deployments.filter((d) => d.metadata?.name !== SIMULATOR), ...changed.jobs]) {
        const refs = onlyContainer(podSpec(workload.spec?.template)).envFrom?.map((from) => from.configMapRef?.name);
        expect(refs, workload.metadata?.name).toEqual([after]);
      }
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describe('deploy/kubernetes/secret.example.yaml', () => {
  it('shows the Secret every reference names, key for key, without values', async () => {
    const example: unknown = parse(await readFile(join(KUBERNETES, 'secret.example.yaml'), 'utf8'));
    if (!Secret.is(example)) throw new Error('secret.example.yaml is no v1 Secret');
    new Secret(example).validate();
    expect(example.metadata?.name).toBe(SECRET_NAME);
    expect(example.data).toBeUndefined();
    expect(Object.keys(example.stringData ?? {}).sort()).toEqual([...SECRET_KEYS].sort());
    expect(Object.values(example.stringData ?? {}).every((value) => value === '')).toBe(true);
  });
});
