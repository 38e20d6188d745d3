import { parseArgs } from 'node:util';
import { loadCliConfig, type CliConfig } from '../config.js';

const USAGE = `Usage: npm run cli -- partner <command> [options]

Commands:
  create --name "X Bank" [--qr-standard qrpay|govstd] [--env sandbox|production] [--inactive]
  list
  activate <partnerId>
  deactivate <partnerId>
  rotate-key <partnerId>
  set-qr-standard <partnerId> <qrpay|govstd>

Environment: ADMIN_URL (default http://127.0.0.1:3001), ADMIN_TOKEN (default local-admin-token)`;

class UsageError extends Error {}

async function call(config: CliConfig, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${config.adminUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${config.adminToken}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  const parsed: unknown = text ? JSON.parse(text) : null;
  if (!res.ok) throw new Error(`admin API answered ${res.status}: ${text}`);
  return parsed;
}

function need(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing ${what}`);
  return value;
}

async function run(argv: string[], config: CliConfig): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'qr-standard': { type: 'string' },
      env: { type: 'string' },
      inactive: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [resource, command, id, arg] = positionals;
  if (values.help || resource !== 'partner') throw new UsageError(resource ? `unknown resource ${resource}` : 'missing resource');
  switch (command) {
    case 'create':
      return call(config, 'POST', '/admin/partners', {
        name: need(values.name, '--name'),
        ...(values['qr-standard'] ? { qrStandard: values['qr-standard'] } : {}),
        ...(values.env ? { environment: values.env } : {}),
        ...(values.inactive ? { active: false } : {}),
      });
    case 'list':
      return call(config, 'GET', '/admin/partners');
    case 'activate':
    case 'deactivate':
      return call(config, 'PATCH', `/admin/partners/${encodeURIComponent(need(id, 'partner id'))}`, { active: command === 'activate' });
    case 'rotate-key':
      return call(config, 'POST', `/admin/partners/${encodeURIComponent(need(id, 'partner id'))}/keys`);
    case 'set-qr-standard':
      return call(config, 'PATCH', `/admin/partners/${encodeURIComponent(need(id, 'partner id'))}`, {
        qrStandard: need(arg ?? values['qr-standard'], 'qr standard'),
      });
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'missing command');
  }
}

export async function main(argv: string[], config: CliConfig = loadCliConfig()): Promise<number> {
  try {
    const result = await run(argv, config);
    console.log(JSON.stringify(result, null, 2));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
