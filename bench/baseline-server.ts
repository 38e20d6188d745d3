import Fastify from 'fastify';

/** The bare Fastify "hello JSON" server every endpoint is compared against, in the same run. */
const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world', at: new Date().toISOString() }));
const port = Number(process.argv[2] ?? 0);
await app.listen({ port, host: '127.0.0.1' });
console.log('baseline ready');
