-- The confirmation job's claim of due checks (PaymentRepository.claimDue through claimLeased):
-- the service's statement, claiming one payment (one free slot, in the client's own ministry
-- system's lane) where the job claims every due payment of a pass in one statement. The oldest
-- due payment of the lane is taken, whichever client submitted it.
WITH lanes AS (SELECT v.lane_key, v.free, v.lane_key AS turn_key FROM (VALUES ('mof'::text, :free_mof::int), ('etax'::text, :free_etax::int), ('police'::text, :free_police::int)) AS v(lane_key, free)),
locked AS (
  SELECT l.lane_key, l.turn_key, c.* FROM lanes l
  CROSS JOIN LATERAL (
    SELECT "id", "next_check_at" AS due_at FROM "payments"
    WHERE "source" = l.lane_key AND status IN ('pending', 'submitted') AND ("status_check_until" IS NULL OR "status_check_until" <= now()) AND "next_check_at" <= now()
    ORDER BY "next_check_at"
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
  WHERE true
  ORDER BY turn, due_at, "id"
  LIMIT 1::int
), claimed AS (
  UPDATE "payments" t
  SET "next_check_at" = now() + interval '30 seconds', "check_attempts" = t.check_attempts + 1, status_check_until = now() + interval '30 seconds', status_check_token = NULL
  FROM chosen
  WHERE ("t"."id") = ("chosen"."id")
  RETURNING "t"."id", "t"."partner_id", "t"."invoice_id", "t"."amount", "t"."source", "t"."status", "t"."failure_reason", "t"."submitted_at", "t"."paid_at", "t"."canceled_at", "t"."next_check_at", "t"."check_attempts", "t"."status_event", "t"."status_cause", "t"."status_detail", "t"."user_id", "t"."qr_text", "t"."remaining_balance", "t"."status_check_until", "t"."status_check_token", "t"."status_checked_at", "t"."expiry_ms", "t"."created_at", "t"."updated_at", (SELECT i.ref_num FROM invoices i WHERE i.id = t.invoice_id) AS ref_num, t."check_attempts" AS lease_token
)
SELECT * FROM claimed;
