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
