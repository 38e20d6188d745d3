-- POST /payments, the ministry accepted it: pending -> submitted with the `payment.submitted`
-- outbox event and its deliveries (PaymentRepository.markSubmitted with Outbox.outbox).
-- Due for its first check at once, as the service makes it.
WITH moved AS (
  UPDATE payments SET status = 'submitted', status_event = 'ministry_accepted', status_cause = 'partner_request', status_detail = '{"ministry": "accepted", "linkedRefNums": []}'::jsonb, updated_at = now(), submitted_at = now(),
    next_check_at = now()
  WHERE id = :p_id::uuid AND status IN ('pending')
  RETURNING "id", "partner_id", "invoice_id", "amount", "source", "status", "failure_reason", "submitted_at", "paid_at", "canceled_at", "next_check_at", "check_attempts", "status_event", "status_cause", "status_detail", "user_id", "qr_text", "remaining_balance", "status_check_until", "status_check_token", "status_checked_at", "expiry_ms", "created_at", "updated_at"
), ev AS (
  INSERT INTO events (partner_id, event, payload, payment_id)
  SELECT partner_id, 'payment.submitted', jsonb_build_object('id', :p_id::text, 'invoiceId', :i_id::text), :p_id::uuid FROM "moved"
  RETURNING id, partner_id
), deliveries AS (
  INSERT INTO webhook_deliveries (webhook_id, event_id, status, next_attempt_at)
  SELECT w.id, ev.id, 'pending', now()
  FROM webhooks w JOIN ev ON w.partner_id = ev.partner_id
  WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL AND w.events @> '["payment.submitted"]'::jsonb
)
SELECT "id", "partner_id", "invoice_id", "amount", "source", "status", "failure_reason", "submitted_at", "paid_at", "canceled_at", "next_check_at", "check_attempts", "status_event", "status_cause", "status_detail", "user_id", "qr_text", "remaining_balance", "status_check_until", "status_check_token", "status_checked_at", "expiry_ms", "created_at", "updated_at" FROM moved;
