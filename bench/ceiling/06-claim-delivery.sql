-- The webhook job's claim of due deliveries (WebhookDeliveryRepository.claimDue through
-- claimLeased), the service's statement for the normal lane. One delivery: the client's own
-- partner alone has a free slot (partner_free names it with 1, every other partner gets the
-- per-partner default, 0 here), where the job claims every due delivery of a pass at once.
WITH endpoint_free AS (SELECT key::uuid AS "webhook_id", value::int AS free FROM jsonb_each_text('{}'::jsonb)), partner_free AS (SELECT key::uuid AS "partner_id", value::int AS free FROM jsonb_each_text(:partner_free::jsonb)), lanes AS (SELECT w.id AS lane_key, coalesce(ef.free, 2::int) AS free, w.partner_id AS turn_key
  FROM webhooks w
  LEFT JOIN endpoint_free ef ON ef.webhook_id = w.id
  WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL
    AND (w.slow_since IS NOT NULL) = false::boolean
    AND coalesce((SELECT free FROM partner_free WHERE partner_id = w.partner_id), 0::int) > 0),
locked AS (
  SELECT l.lane_key, l.turn_key, c.* FROM lanes l
  CROSS JOIN LATERAL (
    SELECT "id", "next_attempt_at" AS due_at FROM "webhook_deliveries"
    WHERE "webhook_id" = l.lane_key AND status = 'pending' AND "next_attempt_at" <= now()
    ORDER BY "next_attempt_at"
    LIMIT l.free
    FOR UPDATE SKIP LOCKED
  ) c
  WHERE l.free > 0
), ranked AS (
  SELECT *, row_number() OVER (PARTITION BY lane_key ORDER BY due_at, "id") AS lane_rank FROM locked
), turns AS (
  SELECT *, row_number() OVER (PARTITION BY turn_key ORDER BY lane_rank, due_at, "id") AS turn FROM ranked
), chosen AS (
  SELECT "id" FROM turns r
  WHERE r.turn <= least(
  coalesce((SELECT free FROM partner_free WHERE partner_id = r.turn_key), 0::int),
  coalesce(greatest(1, 32::int / (
    (SELECT count(*)::int FROM (SELECT partner_id FROM partner_free UNION SELECT turn_key FROM locked) p) + 1
  )), 0::int) - (0::int - coalesce((SELECT free FROM partner_free WHERE partner_id = r.turn_key), 0::int))
)
  ORDER BY turn, due_at, "id"
  LIMIT 1::int
), claimed AS (
  UPDATE "webhook_deliveries" t
  SET "next_attempt_at" = now() + interval '30 seconds', "attempts" = t.attempts + 1, updated_at = now()
  FROM chosen
  WHERE ("t"."id") = ("chosen"."id")
  RETURNING t.id, t.webhook_id, t.event_id, t."attempts" AS lease_token
)
SELECT c.id, c.webhook_id, c.event_id, c.lease_token, w.partner_id, w.url, w.secret_ciphertext,
    w.previous_secret_ciphertext, w.previous_secret_expires_at, e.event, e.payload, e.created_at
  FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN events e ON e.id = c.event_id \gset d_
