import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config';

/*
 * docker-compose.yml (images cannot be pulled here, so it is checked, not run): the topology the
 * operations section describes, every setting it gives an instance one the service reads and
 * accepts, every file it mounts present, and Prometheus scraping what the instances expose.
 */

const ROOT = path.join(__dirname, '..', '..');
interface Service {
  image?: string;
  build?: string;
  profiles?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  entrypoint?: string[];
}
const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const instances = Object.entries(services).filter(([, s]) => s.build === '.');

describe('docker-compose.yml', () => {
  it('should run two instances on a PostgreSQL primary and replica and Redis, Prometheus and Grafana under a profile', () => {
    expect(instances.map(([name]) => name).sort()).toEqual(['payorch-a', 'payorch-b']);
    for (const [, s] of instances) {
      expect(s.environment?.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(s.environment?.DATABASE_REPLICA_URLS).toMatch(/@postgres-replica:5432\//);
      expect(s.environment?.REDIS_URL).toBe('redis://redis:6379');
    }
    expect(services['postgres-replica'].entrypoint).toEqual(['/replica-start.sh']);
    expect(services.prometheus.profiles).toEqual(['monitoring']);
    expect(services.grafana.profiles).toEqual(['monitoring']);
  });

  it('should give each instance only settings the service reads, with values it accepts', () => {
    for (const [, s] of instances) {
      const env = s.environment ?? {};
      for (const name of Object.keys(env)) expect(CONFIG_VARIABLES).toContain(name);
      // Loads as the service would at start-up (a refused value throws ConfigError).
      const config = loadConfig({ ...env, DATA_DIR: '/tmp/payorch-compose-check' });
      expect(config).toBeDefined();
    }
  });

  it('should mount only files that exist in the repository', () => {
    const mounts = Object.values(services).flatMap((s) => s.volumes ?? []).filter((v) => v.startsWith('./'));
    expect(mounts.length).toBeGreaterThan(0);
    for (const mount of mounts) expect(fs.existsSync(path.join(ROOT, mount.split(':')[0]))).toBe(true);
  });

  it('should have Prometheus scrape every instance on its metrics port', () => {
    const prometheus = parse(fs.readFileSync(path.join(ROOT, 'docs', 'compose', 'prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = prometheus.scrape_configs.flatMap((c) => c.static_configs.flatMap((sc) => sc.targets)).sort();
    expect(targets).toEqual(instances.map(([name, s]) => `${name}:${s.environment?.METRICS_PORT}`).sort());
  });
});
