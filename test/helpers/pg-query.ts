import pg from 'pg';

/** One query on a short-lived client of `url` (a database the test made, seen from outside the service). */
export async function queryOnce<T extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** Creates database `name` on the server of `url` and gives the URL of it (the same server, user and options). */
export async function createDatabase(url: string, name: string): Promise<string> {
  await queryOnce(url, `CREATE DATABASE ${name}`);
  const created = new URL(url);
  created.pathname = `/${name}`;
  return created.toString();
}
