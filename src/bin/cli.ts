import { loadCliConfig } from '../config/process-env.js';
import { startFailure } from '../config/start-failure.js';
import { main } from './cli-commands.js';

// The runnable entry point only: the commands live in cli-commands.ts, which tests import.
try {
  const config = loadCliConfig();
  process.exitCode = await main(process.argv.slice(2), config);
} catch (err) {
  const failure = startFailure(err, 'cli');
  if (!failure) throw err;
  for (const line of failure.lines) console.error(line);
  process.exitCode = failure.exitCode;
}
