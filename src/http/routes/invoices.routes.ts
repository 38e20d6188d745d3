import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, commonErrors } from '../../schemas/common.schema.js';
import { InvoiceBody, InvoiceListBody, InvoiceSearchQuery, RefNumParams } from '../../schemas/invoice.schema.js';
import type { InvoiceService } from '../../services/invoice.service.js';
import { INVOICE_FILTER_KINDS, type InvoiceFilterKind } from '../../domain/vocabulary.js';


export const invoiceRoutes: FastifyPluginAsyncTypebox<{ invoices: InvoiceService }> = async (app, { invoices }) => {
  app.get(
    '/invoices',
    {
      schema: {
        tags: ['Invoices'],
        summary: 'Look up invoices by exactly one of taxpayer number, vehicle plate or tax reference',
        querystring: InvoiceSearchQuery,
        response: { 200: InvoiceListBody, ...commonErrors },
      },
    },
    async (request) => {
      // The schema guarantees exactly one filter is present.
      const kind = INVOICE_FILTER_KINDS.find((k) => request.query[k] !== undefined) as InvoiceFilterKind;
      return invoices.search(request.partner.id, { kind, value: request.query[kind] as string });
    },
  );

  app.get(
    '/invoices/ref/:refNum',
    {
      schema: {
        tags: ['Invoices'],
        summary: 'Fetch one invoice live from the ministry system by its reference number',
        params: RefNumParams,
        response: { 200: InvoiceBody, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => invoices.getByRef(request.partner.id, request.params.refNum),
  );

  app.get(
    '/invoices/:id',
    {
      schema: {
        tags: ['Invoices'],
        summary: 'Read the stored copy of an invoice (no ministry call)',
        params: IdParams,
        response: { 200: InvoiceBody, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => invoices.getStored(request.partner.id, request.params.id),
  );

  app.get(
    '/invoices/:id/refresh',
    {
      schema: {
        tags: ['Invoices'],
        summary: 'Re-read an invoice from its ministry system and update the stored copy',
        params: IdParams,
        response: { 200: InvoiceBody, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request) => invoices.refresh(request.partner.id, request.params.id),
  );
};
