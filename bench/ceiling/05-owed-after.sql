-- The check found the payment confirmed at the ministry: what its invoice still owes after it
-- (PaymentRepository.owedAfter, from PaymentResolver's confirm; null for a whole payment).
SELECT CASE WHEN b.whole OR b.owed <= 0 THEN NULL ELSE b.owed END AS owed
FROM (
  SELECT p.amount >= i.amount AS whole, i.billed_amount - p.amount - coalesce((
    SELECT sum(o.amount) FROM payments o
    WHERE o.invoice_id = i.id AND o.id <> p.id AND o.status = 'confirmed' AND o.remaining_balance IS NOT NULL
  ), 0) AS owed
  FROM payments p JOIN invoices i ON i.id = p.invoice_id
  WHERE p.id = :p_id::uuid
) b;
