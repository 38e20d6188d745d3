-- Not a transaction of the life: once per pgbench client, the partner it pays as (one partner
-- and one webhook per client, seeded by bench/ceiling.bench.ts) and the ministry system its
-- invoices come from (the client's number modulo 3: mof, etax, police). Every run of the script
-- then takes the client's next seeded invoice (`invoice_key`), so no two clients meet on a row.
\if :first
SELECT p.id AS partner_id, '{"' || p.id || '": 1}' AS partner_free
  FROM partners p WHERE p.name = 'ceiling ' || :client_id::int \gset
\set free_mof CASE WHEN :client_id % 3 = 0 THEN 1 ELSE 0 END
\set free_etax CASE WHEN :client_id % 3 = 1 THEN 1 ELSE 0 END
\set free_police CASE WHEN :client_id % 3 = 2 THEN 1 ELSE 0 END
\set first 0
\endif
\set n :n + 1
\set invoice_key :client_id * 10000000 + :n
