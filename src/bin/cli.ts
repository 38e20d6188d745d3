import { main } from './cli-commands.js';

// The runnable entry point only: the commands live in cli-commands.ts, which tests import.
process.exitCode = await main(process.argv.slice(2));
