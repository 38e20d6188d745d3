-- POST /payments: the pending payment holding its invoice (PaymentRepository.insertPending,
-- without an idempotency key, as the lifecycle bench's payers send none). The service chooses
-- the id before the insert (the QR payload carries it); here the database does.
WITH p AS (
  INSERT INTO payments (id, partner_id, invoice_id, source, amount, status, next_check_at, user_id, qr_text, expiry_ms)
  SELECT gen_random_uuid(), :partner_id::uuid, :i_id::uuid, :i_source, :i_amount::numeric, 'pending', now() + interval '30 seconds', NULL,
    '00020101021238570010A00000072701270006970436011300000000000000208QRIBFTTA53037045406100.005802VN62340107NPS686908170000000000000000000000000000000000000000000000000000000000000063041234',
    (SELECT s.payment_expiry_ms FROM sandbox_invoices s WHERE s.invoice_id = :i_id::uuid)
  WHERE true
  RETURNING "id", "partner_id", "invoice_id", "amount", "source", "status", "failure_reason", "submitted_at", "paid_at", "canceled_at", "next_check_at", "check_attempts", "status_event", "status_cause", "status_detail", "user_id", "qr_text", "remaining_balance", "status_check_until", "status_check_token", "status_checked_at", "expiry_ms", "created_at", "updated_at"
), held AS (
  INSERT INTO payment_invoices (payment_id, invoice_id, position, active)
  SELECT id, invoice_id, 0, true FROM p
)
SELECT "id", "partner_id", "invoice_id", "amount", "source", "status", "failure_reason", "submitted_at", "paid_at", "canceled_at", "next_check_at", "check_attempts", "status_event", "status_cause", "status_detail", "user_id", "qr_text", "remaining_balance", "status_check_until", "status_check_token", "status_checked_at", "expiry_ms", "created_at", "updated_at" FROM p \gset p_
