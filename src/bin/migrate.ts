import { loadDatabaseConfig } from '../config/config.js';
import { startFailure } from '../config/start-failure.js';
import { migrateDatabase } from '../composition/data.factory.js';

/*
 * The migration step of a deploy: `npm run migrate`, in the image `node dist/src/bin/migrate.js`.
 * It migrates the database of DATABASE_URL (or the embedded one in DATA_DIR) to this release's
 * last migration, before the release's instances start with MIGRATE_ON_START=false. Exit codes:
 * 0 migrated or nothing to do, 1 it failed (one line), 78 a setting is wrong.
 */
async function run(): Promise<void> {
  const config = loadDatabaseConfig();
  const outcome = await migrateDatabase(config);
  for (const name of outcome.applied) console.log(`applied ${name}`);
  if (outcome.applied.length === 0) console.log(`already at ${outcome.at ?? 'no migration'}`);
  if (outcome.newer.length > 0) {
    console.log(`the database also has ${outcome.newer.join(', ')}, which this release does not: a newer release migrated it, and this one runs on it as it is`);
  }
}

/** An error as one line: a connection refused comes from pg as an AggregateError with no message of its own. */
function oneLine(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const text = err.message || (typeof code === 'string' ? code : '') || err.name;
  return text.replace(/\s*\n\s*/g, ' ');
}

run().catch((err: unknown) => {
  const failure = startFailure(err, 'migrate');
  const lines = failure?.lines ?? [`migrate: ${oneLine(err)}`];
  for (const line of lines) console.error(line);
  process.exit(failure?.exitCode ?? 1);
});
