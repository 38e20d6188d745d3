-- The check found the payment confirmed at the ministry: submitted -> confirmed, its invoice
-- paid, the `payment.confirmed` outbox event with its deliveries and pushes, in one statement
-- that also finds the invoice owing nothing after it by our books
-- (PaymentRepository.markConfirmedIfSettled with Outbox.outbox, from PaymentResolver's
-- confirm; a part-payment would move nothing here and take the balance's path with what the
-- books leave owing).
WITH books AS (SELECT b.whole OR b.owed <= 0 AS settles, b.owed FROM (
  SELECT p.amount >= i.amount AS whole, i.billed_amount - p.amount - coalesce((
    SELECT sum(o.amount) FROM payments o
    WHERE o.invoice_id = i.id AND o.id <> p.id AND o.status = 'confirmed' AND o.remaining_balance IS NOT NULL
  ), 0) AS owed
  FROM payments p JOIN invoices i ON i.id = p.invoice_id
  WHERE p.id = :p_id::uuid
) b), moved AS (
  UPDATE payments SET status = 'confirmed', status_event = 'ministry_approved', status_cause = 'confirmation_job', status_detail = jsonb_build_object('ministry', 'confirmed', 'confirmedAt', now()), updated_at = now(), paid_at = now(), next_check_at = NULL
  WHERE id = :p_id::uuid AND status IN ('submitted') AND (SELECT settles FROM books)
  RETURNING "id", "partner_id", "invoice_id", "amount", "source", "status", "failure_reason", "submitted_at", "paid_at", "canceled_at", "next_check_at", "check_attempts", "status_event", "status_cause", "status_detail", "user_id", "qr_text", "remaining_balance", "status_check_until", "status_check_token", "status_checked_at", "expiry_ms", "created_at", "updated_at"
), paid AS (
  UPDATE invoices SET status = 'paid', updated_at = now()
  WHERE id IN (SELECT pi.invoice_id FROM payment_invoices pi JOIN moved ON pi.payment_id = moved.id WHERE pi.active)
    AND status IN ('open')
  RETURNING id
), ev AS (
  INSERT INTO events (partner_id, event, payload, payment_id)
  SELECT partner_id, 'payment.confirmed', jsonb_build_object('id', :p_id::text, 'amount', :p_amount::numeric), :p_id::uuid FROM "moved"
  RETURNING id, partner_id
), deliveries AS (
  INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at)
  SELECT w.id, ev.id, 'pending', now()
  FROM webhooks w JOIN ev ON w.partner_id = ev.partner_id
  WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL AND w.events @> '["payment.confirmed"]'::jsonb
), pushes AS (
  INSERT INTO push_deliveries (event_id, partner_id, device_id, status, next_attempt_at)
  SELECT ev.id, ev.partner_id, d.id, 'pending', now()
  FROM ev JOIN "moved" s ON s.partner_id = ev.partner_id
  JOIN devices d ON d.partner_id = s.partner_id AND d.user_id = s.user_id
  WHERE s.user_id IS NOT NULL
)
SELECT EXISTS (SELECT 1 FROM moved) AS moved, (SELECT settles FROM books) AS settles, (SELECT owed FROM books) AS owed,
  coalesce((SELECT array_agg(id) FROM paid), '{}') AS ids;
