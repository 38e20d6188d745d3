-- POST /payments: the partner's invoice (InvoiceRepository.findForPartner).
-- The service names the invoice's id; here it is made from the client's invoice_key, as the
-- bench seeded it (an expression over the parameter, evaluated once per execution).
select "i"."id", "i"."source", "i"."ref_num", "i"."description", "i"."amount", "i"."billed_amount", "i"."status", "i"."due_date", "i"."issued_at", "i"."vehicle_no", "i"."tax_ref", "i"."payer_register", "i"."payer_name", "i"."payee_id", "i"."payee_name", "i"."year", "i"."created_at", "i"."updated_at"
  from "invoices" as "i" inner join "partner_invoices" as "pi" on "pi"."invoice_id" = "i"."id"
  where "pi"."partner_id" = :partner_id and "i"."id" = ('00000000-0000-4000-8000-' || lpad(:invoice_key::text, 12, '0'))::uuid \gset i_
